//! Which construction error PyYAML reports first, when a document has several.
//!
//! PyYAML's constructors for collections are generators: `construct_object` returns an empty
//! container at once and queues the generator that fills it, and the queue runs generation
//! after generation. Errors therefore surface breadth-first, while `Constructor::object`
//! builds depth-first. This walk replays PyYAML's order; it only runs after construction has
//! failed, so valid documents pay nothing for it.

use std::collections::VecDeque;

use super::{Constructor, expected, unhashable};
use crate::error::{Error, Result};
use crate::graph::{Child, Content, RawTag};
use crate::value::Tag;

impl Constructor<'_> {
    /// The error PyYAML would report first, or `None` if it finds none.
    pub(super) fn first_error_in_pyyaml_order(&self, root: usize) -> Option<Error> {
        let mut visited = vec![false; self.nodes.len()];
        let mut pending = VecDeque::new();
        let mut result = self.visit(root, &mut visited, &mut pending);
        while result.is_ok()
            && let Some(index) = pending.pop_front()
        {
            result = self.fill(index, &mut visited, &mut pending);
        }
        result.err()
    }

    /// PyYAML's `construct_object`: scalars are built at once, collections are queued.
    fn visit(
        &self,
        index: usize,
        visited: &mut [bool],
        pending: &mut VecDeque<usize>,
    ) -> Result<()> {
        if std::mem::replace(&mut visited[index], true) {
            return Ok(());
        }
        match self.nodes[index].tag {
            RawTag::Standard(Tag::Seq | Tag::Map | Tag::Set | Tag::Omap | Tag::Pairs) => {
                pending.push_back(index);
                Ok(())
            }
            _ => self
                .object(
                    Child {
                        node: index,
                        alias: None,
                    },
                    None,
                )
                .map(drop),
        }
    }

    /// The body of PyYAML's generator constructor for a queued collection.
    fn fill(
        &self,
        index: usize,
        visited: &mut [bool],
        pending: &mut VecDeque<usize>,
    ) -> Result<()> {
        let raw = &self.nodes[index];
        match raw.tag {
            RawTag::Standard(Tag::Seq) => {
                let Content::Sequence(items) = &raw.content else {
                    return Err(expected(raw, "a sequence node"));
                };
                items
                    .iter()
                    .try_for_each(|item| self.visit(item.node, visited, pending))
            }
            RawTag::Standard(Tag::Omap | Tag::Pairs) => {
                for item in self.pair_items(index)? {
                    let (key, value) = self.pair_of(index, item)?;
                    self.visit(key.node, visited, pending)?;
                    self.visit(value.node, visited, pending)?;
                }
                Ok(())
            }
            _ => {
                if !matches!(raw.content, Content::Mapping(_)) {
                    return Err(expected(raw, "a mapping node"));
                }
                for entry in self.flatten(index)? {
                    let key_raw = &self.nodes[entry.key.node];
                    if key_raw.tag == RawTag::Standard(Tag::Value) {
                        self.scalar_text(entry.key.node)?;
                    } else {
                        self.visit(entry.key.node, visited, pending)?;
                    }
                    // These tags build lists, dicts and sets, which Python cannot hash.
                    if is_collection(&key_raw.tag) {
                        return Err(unhashable(key_raw, raw));
                    }
                    self.visit(entry.value.node, visited, pending)?;
                }
                Ok(())
            }
        }
    }
}

/// Whether the tag builds a collection (filled later by PyYAML's generator constructors).
fn is_collection(tag: &RawTag) -> bool {
    matches!(
        tag,
        RawTag::Standard(Tag::Seq | Tag::Map | Tag::Set | Tag::Omap | Tag::Pairs)
    )
}
