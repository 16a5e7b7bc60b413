//! Turns granit-parser's events into a graph of raw nodes, as PyYAML's composer does.
//!
//! This stage checks what PyYAML checks while composing: one document at most, anchors
//! defined once with PyYAML's name alphabet, aliases to defined anchors. It also enforces the
//! [`Limits`]: every node counts, and an alias counts the whole subtree it repeats, so an
//! exponential "billion laughs" document is refused at the alias that crosses the limit,
//! before anything is copied. Tags are resolved here; values are built by `construct`.

use std::borrow::Cow;
use std::collections::HashMap;

use granit_parser::{Event, Marker, Options, Parser, ScalarStyle, ScanError, StructureStyle};

use crate::Limits;
use crate::error::{Error, ErrorKind, Limit, Result};
use crate::graph::{Child, Content, Document, RawNode, RawTag};
use crate::pyyaml_syntax::{self, TabRegion};
use crate::resolve::resolve_plain;
use crate::span::{Mark, Span};
use crate::value::{Style, Tag};

/// Composes the single document of `source`, or `None` for a stream without documents.
pub(crate) fn compose<'source>(
    source: &'source str,
    limits: &Limits,
) -> Result<Option<Document<'source>>> {
    if source.len() > limits.max_bytes {
        let end = crate::span::mark_at(source, source.len());
        return Err(Error::new(
            ErrorKind::LimitExceeded(Limit::Bytes),
            format!(
                "the document is larger than the limit of {} bytes",
                limits.max_bytes
            ),
            Span::new(crate::span::mark_at(source, 0), end),
        ));
    }
    pyyaml_syntax::check_printable(source)?;
    pyyaml_syntax::check_line_breaks(source)?;
    pyyaml_syntax::check_leading_document_end(source)?;
    let mut options = Options::default();
    // PyYAML (through libyaml's rules) keeps a BOM inside a document as content, and ends a
    // block scalar that runs to the end of input without adding a line feed.
    options.bom_inside_document_as_content = true;
    options.block_scalar_eof_without_line_feed = true;
    options.emit_anchor_events = true;
    options.emit_unresolved_aliases = true;
    // Comment positions tell where PyYAML tolerates tabs (see `check_tabs`), so a source
    // without tabs needs none (and parses faster without). granit buffers comments while
    // looking ahead; the input size already bounds that buffer.
    options.emit_comments = source.contains('\t');
    options.max_buffered_comment_events = usize::MAX;
    // granit counts nesting differently from collections (block indentation levels), so give
    // it slack; `max_depth` itself is enforced below, and granit's limit only guards its stack.
    let parser_depth = limits.max_depth.saturating_add(2);
    options.flow_nesting_limit = parser_depth;
    options.block_nesting_limit = parser_depth;
    let mut composer = Composer {
        source,
        limits,
        // Growing a vector of large nodes re-copies it; realistic files have at least about
        // eight bytes per node, so this usually avoids every reallocation.
        nodes: Vec::with_capacity((source.len() / 8).min(limits.max_nodes) + 1),
        stack: Vec::new(),
        anchors_by_id: HashMap::new(),
        anchor_names: HashMap::new(),
        total_nodes: 0,
        root: None,
        documents: 0,
        tab_regions: Vec::new(),
    };
    for item in Parser::new_from_str_with_options(source, options) {
        let (event, span) = item.map_err(|error| composer.scan_error(&error))?;
        if matches!(event, Event::StreamEnd) {
            break;
        }
        composer.handle(event, &span)?;
    }
    pyyaml_syntax::check_tabs(source, &mut composer.tab_regions)?;
    Ok(composer.root.map(|root| Document {
        nodes: composer.nodes,
        root,
    }))
}

/// What `add_node` needs to know about a node.
struct NewNode<'source> {
    content: Content<'source>,
    span: Span,
    start: Mark,
    tag: RawTag,
    style: Style,
}

/// A collection's tag: explicit, or `implicit` when absent or non-specific (`!`).
fn collection_tag(full_tag: Option<&str>, implicit: Tag) -> RawTag {
    match full_tag {
        None | Some("!") => RawTag::Standard(implicit),
        Some(uri) => standard_or_other(uri),
    }
}

fn standard_or_other(uri: &str) -> RawTag {
    Tag::from_uri(uri).map_or_else(|| RawTag::Other(uri.to_owned()), RawTag::Standard)
}

struct Composer<'source, 'limits> {
    source: &'source str,
    limits: &'limits Limits,
    nodes: Vec<RawNode<'source>>,
    /// Open collections and, for mappings, the key waiting for its value.
    stack: Vec<(usize, Option<Child>)>,
    anchors_by_id: HashMap<usize, usize>,
    /// Anchor names defined so far, with where they were first defined.
    anchor_names: HashMap<String, Span>,
    total_nodes: usize,
    root: Option<usize>,
    documents: usize,
    /// Where PyYAML accepts tab characters: comments, quoted scalars, block scalar content.
    tab_regions: Vec<TabRegion>,
}

impl<'source> Composer<'source, '_> {
    /// Applies one parser event to the graph being composed.
    fn handle(&mut self, event: Event<'source>, parser_span: &granit_parser::Span) -> Result<()> {
        let span = self.span(parser_span);
        // PyYAML's node position includes the tag (the anchor is added by its own event).
        let start = parser_span
            .tag_start
            .map_or(span.start, |mark| self.mark(&mark));
        let mut full_tag = event
            .tag()
            .map(|tag| format!("{}{}", tag.handle(), tag.suffix()));
        if let Some(tag_span) = parser_span.tag_span()
            && let Some(extra) = pyyaml_syntax::check_tag_end(self.source, self.span(&tag_span))?
            && let Some(tag) = &mut full_tag
        {
            tag.push_str(&extra);
        }
        match event {
            Event::DocumentStart(..) => self.start_document(span),
            Event::Scalar(text, style, anchor_id, _) => {
                self.add_scalar(text, style, full_tag.as_deref(), anchor_id, (span, start))
            }
            Event::SequenceStart(structure, anchor_id, _) => {
                let style = match structure {
                    StructureStyle::Block => Style::BlockSequence,
                    StructureStyle::Flow => Style::FlowSequence,
                };
                let tag = collection_tag(full_tag.as_deref(), Tag::Seq);
                let content = Content::Sequence(Vec::new());
                let node = NewNode {
                    content,
                    span,
                    start,
                    tag,
                    style,
                };
                self.open_collection(node, anchor_id)
            }
            Event::MappingStart(structure, anchor_id, _) => {
                let style = match structure {
                    StructureStyle::Block => Style::BlockMapping,
                    StructureStyle::Flow => Style::FlowMapping,
                };
                let tag = collection_tag(full_tag.as_deref(), Tag::Map);
                let content = Content::Mapping(Vec::new());
                let node = NewNode {
                    content,
                    span,
                    start,
                    tag,
                    style,
                };
                self.open_collection(node, anchor_id)
            }
            Event::SequenceEnd | Event::MappingEnd => {
                self.close_collection(span);
                Ok(())
            }
            Event::Alias(id) => self.add_alias(id, span),
            Event::UnresolvedAlias(name) => {
                pyyaml_syntax::check_anchor_name(self.source, span, "alias")?;
                Err(Error::new(
                    ErrorKind::UndefinedAlias,
                    format!(
                        "found undefined alias {}",
                        crate::integer::python_repr(&name)
                    ),
                    span,
                ))
            }
            Event::Anchor(id, name) => self.define_anchor(id, &name, span),
            Event::Comment(..) => {
                self.tab_regions.push(TabRegion {
                    range: span.byte_range(),
                    block_indent: None,
                });
                Ok(())
            }
            // Stream and document boundaries carry no data.
            _ => Ok(()),
        }
    }

    fn add_scalar(
        &mut self,
        text: Cow<'source, str>,
        style: ScalarStyle,
        full_tag: Option<&str>,
        anchor_id: usize,
        (span, start): (Span, Mark),
    ) -> Result<()> {
        let is_block = matches!(style, ScalarStyle::Literal | ScalarStyle::Folded);
        // PyYAML's block scalar starts at its `|` or `>` header; granit's span starts at the text.
        let start = if is_block && start == span.start {
            pyyaml_syntax::block_scalar_header(self.source, span.start.offset)
                .map_or(start, |offset| {
                    crate::span::mark_before(self.source, start, offset)
                })
        } else {
            start
        };
        // granit reports an omitted value as a plain "~" with an empty span; PyYAML
        // sees an empty scalar, which matters for `!!str` and for the null resolver.
        let omitted = style == ScalarStyle::Plain && span.is_empty();
        let block_indent = match style {
            ScalarStyle::Plain => None,
            ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => Some(None),
            ScalarStyle::Literal | ScalarStyle::Folded => {
                Some(Some(span.start.column.saturating_sub(1)))
            }
        };
        if let Some(block_indent) = block_indent {
            self.tab_regions.push(TabRegion {
                range: span.byte_range(),
                block_indent,
            });
        }
        if omitted && anchor_id == 0 && full_tag.is_none() {
            self.check_empty_key(span)?;
        }
        if is_block
            && self.stack.is_empty()
            && !text.is_empty()
            && span.start.column == 1
            && self
                .source
                .get(span.start.offset..)
                .and_then(|rest| rest.chars().next())
                .is_some_and(|first| !first.is_whitespace())
        {
            // PyYAML indents a top-level block scalar by at least one space; text in the first
            // column ends it, and what follows is not part of the document.
            return Err(Error::new(
                ErrorKind::Syntax,
                "expected the block scalar's text to be indented",
                Span::point(span.start),
            ));
        }
        let text = if omitted { Cow::Borrowed("") } else { text };
        let tag = match full_tag {
            None if style == ScalarStyle::Plain => RawTag::Standard(resolve_plain(&text)),
            None => RawTag::Standard(Tag::Str),
            // The non-specific tag `!` turns implicit resolution on, even when quoted.
            Some("!") => RawTag::Standard(resolve_plain(&text)),
            Some(uri) => standard_or_other(uri),
        };
        let style = match style {
            ScalarStyle::Plain => Style::Plain,
            ScalarStyle::SingleQuoted => Style::SingleQuoted,
            ScalarStyle::DoubleQuoted => Style::DoubleQuoted,
            ScalarStyle::Literal => Style::Literal,
            ScalarStyle::Folded => Style::Folded,
        };
        let node = NewNode {
            content: Content::Scalar(text),
            span,
            start,
            tag,
            style,
        };
        self.add_node(node, anchor_id).map(drop)
    }

    /// PyYAML refuses a `:` with nothing before it in key position (`: value`, `{: value}`),
    /// which YAML 1.2 reads as an empty key; an explicit `?` key may still be empty.
    fn check_empty_key(&self, span: Span) -> Result<()> {
        let in_key_position = self.stack.last().is_some_and(|(parent, pending_key)| {
            pending_key.is_none() && matches!(self.nodes[*parent].content, Content::Mapping(_))
        });
        let at_colon = self.source.as_bytes().get(span.start.offset) == Some(&b':');
        if !in_key_position || !at_colon {
            return Ok(());
        }
        let before = self
            .source
            .get(..span.start.offset)
            .unwrap_or_default()
            .trim_end_matches([' ', '\t', '\r', '\n']);
        if before.ends_with('?') {
            return Ok(());
        }
        Err(Error::new(
            ErrorKind::Syntax,
            "expected a key before ':' (an empty key needs an explicit '?')",
            Span::point(span.start),
        ))
    }

    fn start_document(&mut self, span: Span) -> Result<()> {
        self.documents += 1;
        if self.documents == 1 {
            return Ok(());
        }
        let error = Error::new(
            ErrorKind::MultipleDocuments,
            "expected a single document in the stream, but found another document",
            span,
        );
        Err(match self.root {
            Some(root) => error.with_context(
                "the first document starts here",
                Span::point(self.nodes[root].start),
            ),
            None => error,
        })
    }

    fn mark(&self, marker: &Marker) -> Mark {
        let offset = marker.byte_offset().unwrap_or_else(|| {
            // granit always reports byte offsets for `&str` input; this is a fallback only.
            self.source
                .char_indices()
                .nth(marker.index())
                .map_or(self.source.len(), |(offset, _)| offset)
        });
        Mark {
            offset,
            line: marker.line(),
            column: marker.col() + 1,
        }
    }

    fn span(&self, span: &granit_parser::Span) -> Span {
        Span::new(self.mark(&span.start), self.mark(&span.end))
    }

    /// Converts a granit-parser error, in PyYAML's words for the errors users meet most.
    fn scan_error(&self, error: &ScanError) -> Error {
        use granit_parser::ErrorKind as Scan;
        let at = Span::point(self.mark(error.marker()));
        let next_token = |character: char| {
            Error::new(
                ErrorKind::Syntax,
                format!(
                    "found character {} that cannot start any token",
                    crate::integer::python_repr(&character.to_string())
                ),
                at,
            )
            .with_context("while scanning for the next token", at)
        };
        match error.kind() {
            Scan::RecursionLimitExceeded => self.depth_error(at),
            Scan::UnexpectedCharacter { character } => next_token(*character),
            Scan::TabNotAllowed | Scan::TabInBlockIndentation | Scan::TabInIndentation => {
                next_token('\t')
            }
            // granit reports this at the start of the plain scalar the tab ends; PyYAML ends the scalar there
            // and then fails at the tab itself, which is what a user has to fix.
            Scan::TabInPlainScalar => {
                let from = self.mark(error.marker()).offset.min(self.source.len());
                let tab = self.source[from..]
                    .find('\t')
                    .map_or(from, |offset| from + offset);
                let at = Span::point(crate::span::mark_at(self.source, tab));
                Error::new(
                    ErrorKind::Syntax,
                    "found character '\\t' that cannot start any token",
                    at,
                )
                .with_context("while scanning for the next token", at)
            }
            Scan::MappingValueNotAllowed => {
                Error::new(ErrorKind::Syntax, "mapping values are not allowed here", at)
            }
            Scan::UnclosedQuotedScalar => {
                let end = crate::span::mark_at(self.source, self.source.len());
                Error::new(
                    ErrorKind::Syntax,
                    "found unexpected end of stream",
                    Span::point(end),
                )
                .with_context("while scanning a quoted scalar", at)
            }
            _ => Error::new(ErrorKind::Syntax, error.info(), at),
        }
    }

    fn count(&mut self, added: usize, span: Span) -> Result<()> {
        self.total_nodes = self.total_nodes.saturating_add(added);
        if self.total_nodes > self.limits.max_nodes {
            return Err(Error::new(
                ErrorKind::LimitExceeded(Limit::Nodes),
                format!(
                    "the document has more than {} nodes once aliases are expanded",
                    self.limits.max_nodes
                ),
                span,
            ));
        }
        Ok(())
    }

    fn depth_error(&self, span: Span) -> Error {
        Error::new(
            ErrorKind::LimitExceeded(Limit::Depth),
            format!(
                "the document nests collections deeper than the limit of {} levels",
                self.limits.max_depth
            ),
            span,
        )
    }

    fn add_node(&mut self, node: NewNode<'source>, anchor_id: usize) -> Result<usize> {
        self.count(1, node.span)?;
        let index = self.nodes.len();
        let open = !matches!(node.content, Content::Scalar(_));
        self.nodes.push(RawNode {
            content: node.content,
            span: node.span,
            start: node.start,
            tag: node.tag,
            style: node.style,
            size: 1,
            height: usize::from(open),
            open,
        });
        if anchor_id != 0 {
            self.anchors_by_id.insert(anchor_id, index);
        }
        if !open {
            self.attach(Child {
                node: index,
                alias: None,
            });
        }
        Ok(index)
    }

    fn open_collection(&mut self, node: NewNode<'source>, anchor_id: usize) -> Result<()> {
        if self.stack.len() >= self.limits.max_depth {
            return Err(self.depth_error(node.span));
        }
        let index = self.add_node(node, anchor_id)?;
        self.stack.push((index, None));
        Ok(())
    }

    fn close_collection(&mut self, end: Span) {
        let Some((index, _)) = self.stack.pop() else {
            return;
        };
        let (size, height) = match &self.nodes[index].content {
            Content::Scalar(_) => (1, 0),
            Content::Sequence(items) => self.measure(items.iter()),
            Content::Mapping(pairs) => {
                self.measure(pairs.iter().flat_map(|(key, value)| [key, value]))
            }
        };
        let node = &mut self.nodes[index];
        node.span.end = end.end;
        node.size = size;
        node.height = height;
        node.open = false;
        self.attach(Child {
            node: index,
            alias: None,
        });
    }

    fn measure<'child>(&self, children: impl Iterator<Item = &'child Child>) -> (usize, usize) {
        children.fold((1, 1), |(size, height), child| {
            let node = &self.nodes[child.node];
            (size.saturating_add(node.size), height.max(node.height + 1))
        })
    }

    fn attach(&mut self, child: Child) {
        let Some((parent, pending_key)) = self.stack.last_mut() else {
            self.root = Some(child.node);
            return;
        };
        match &mut self.nodes[*parent].content {
            Content::Sequence(items) => items.push(child),
            Content::Mapping(pairs) => match pending_key.take() {
                Some(key) => pairs.push((key, child)),
                None => *pending_key = Some(child),
            },
            Content::Scalar(_) => {}
        }
    }

    fn add_alias(&mut self, id: usize, span: Span) -> Result<()> {
        pyyaml_syntax::check_anchor_name(self.source, span, "alias")?;
        let Some(&target) = self.anchors_by_id.get(&id) else {
            let name = span
                .slice(self.source)
                .unwrap_or_default()
                .trim_start_matches('*');
            return Err(Error::new(
                ErrorKind::UndefinedAlias,
                format!(
                    "found undefined alias {}",
                    crate::integer::python_repr(name)
                ),
                span,
            ));
        };
        let node = &self.nodes[target];
        if node.open {
            return Err(Error::new(
                ErrorKind::RecursiveAlias,
                "found an alias to a collection that contains it (recursive structures are not supported)",
                span,
            )
            .with_context("the anchored collection starts here", Span::point(node.start)));
        }
        if self.stack.len() + node.height > self.limits.max_depth {
            return Err(self.depth_error(span));
        }
        self.count(node.size, span)?;
        self.attach(Child {
            node: target,
            alias: Some(span),
        });
        Ok(())
    }

    fn define_anchor(&mut self, id: usize, name: &str, span: Span) -> Result<()> {
        pyyaml_syntax::check_anchor_name(self.source, span, "anchor")?;
        if let Some(first) = self.anchor_names.get(name) {
            return Err(Error::new(
                ErrorKind::DuplicateAnchor,
                format!(
                    "found duplicate anchor {}; second occurrence",
                    crate::integer::python_repr(name)
                ),
                span,
            )
            .with_context("first occurrence", *first));
        }
        self.anchor_names.insert(name.to_owned(), span);
        if let Some(&index) = self.anchors_by_id.get(&id) {
            let node = &mut self.nodes[index];
            node.start = node.start.min(span.start);
        }
        Ok(())
    }
}
