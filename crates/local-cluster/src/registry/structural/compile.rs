//! Compilation of an `openAPIV3Schema`: the rules a v1 `CustomResourceDefinition` must follow to be structural
//! (apiextensions' `validateStructuralInvariants`, `validateStructuralCompleteness` and the v1 restrictions of
//! `ValidateCustomResourceDefinitionOpenAPISchema`), then the check that every `default` is pruned and valid.

use serde_json::{Map, Value, json};

use super::{Bound, JsonType, ListType, Node, prune, validate};
use crate::registry::api_error::FieldError;

/// The `type`s Kubernetes accepts, for the `NotSupported` message.
const TYPES: &[&str] = &["array", "boolean", "integer", "number", "object", "string"];

/// JSON-Schema keywords a `CustomResourceDefinition` may not use.
const UNSUPPORTED: &[&str] = &[
    "$ref",
    "$schema",
    "additionalItems",
    "definitions",
    "dependencies",
    "id",
    "patternProperties",
];

pub(super) fn compile(raw: &Value) -> Result<Node, Vec<FieldError>> {
    let mut compiler = Compiler::default();
    let root = compiler.parse(raw, "", Mode::Root);
    // Defaults are judged against the schema, so only once the schema itself holds.
    if compiler.errors.is_empty() {
        compiler.defaults(&root, "", false);
    }
    if compiler.errors.is_empty() {
        Ok(root)
    } else {
        Err(compiler.errors)
    }
}

/// Where a node sits: the structural rules differ at the root, and the nodes of value validations (`anyOf`
/// and co.) may carry no shape at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Root,
    Field,
    Item,
    Nested,
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

fn key(path: &str, name: &str, key: &str) -> String {
    format!("{}[{key}]", child(path, name))
}

fn index(path: &str, name: &str, i: usize) -> String {
    format!("{}[{i}]", child(path, name))
}

/// The only anyOf a structural schema may give types in: the spelled-out form of `x-kubernetes-int-or-string`.
fn is_int_or_string_any_of(raw: &Value) -> bool {
    *raw == json!([{"type": "integer"}, {"type": "string"}])
}

#[derive(Default)]
struct Compiler {
    errors: Vec<FieldError>,
}

impl Compiler {
    fn forbidden(&mut self, field: String, detail: &str) {
        self.errors.push(FieldError::forbidden(field, detail));
    }

    fn required(&mut self, field: String, detail: &str) {
        self.errors.push(FieldError::required(field, detail));
    }

    fn invalid(&mut self, field: String, value: &Value, detail: &str) {
        self.errors.push(FieldError::invalid(field, value, detail));
    }

    fn flag(&mut self, map: &Map<String, Value>, path: &str, name: &str) -> bool {
        match map.get(name) {
            None => false,
            Some(Value::Bool(flag)) => *flag,
            Some(other) => {
                self.invalid(child(path, name), other, "must be a boolean");
                false
            }
        }
    }

    fn count(&mut self, map: &Map<String, Value>, path: &str, name: &str) -> Option<u64> {
        let raw = map.get(name)?;
        let count = raw.as_u64();
        if count.is_none() {
            self.invalid(child(path, name), raw, "must be a non-negative integer");
        }
        count
    }

    fn number(&mut self, map: &Map<String, Value>, path: &str, name: &str) -> Option<f64> {
        let raw = map.get(name)?;
        let number = raw.as_f64();
        if number.is_none() {
            self.invalid(child(path, name), raw, "must be a number");
        }
        number
    }

    fn strings(&mut self, map: &Map<String, Value>, path: &str, name: &str) -> Vec<String> {
        let Some(raw) = map.get(name) else {
            return Vec::new();
        };
        let strings: Option<Vec<String>> = raw.as_array().and_then(|items| {
            items
                .iter()
                .map(|i| i.as_str().map(str::to_owned))
                .collect()
        });
        strings.unwrap_or_else(|| {
            self.invalid(child(path, name), raw, "must be a list of strings");
            Vec::new()
        })
    }

    fn parse(&mut self, raw: &Value, path: &str, mode: Mode) -> Node {
        let mut node = Node::default();
        let Some(map) = raw.as_object() else {
            self.invalid(path.to_owned(), raw, "must be a JSON schema object");
            return node;
        };
        for keyword in UNSUPPORTED {
            if map.contains_key(*keyword) {
                self.forbidden(child(path, keyword), &format!("{keyword} is not supported"));
            }
        }
        let nested = mode == Mode::Nested;
        self.shape(map, path, nested, &mut node);
        self.value_validations(map, path, &mut node);
        match mode {
            Mode::Nested => self.nested_rules(map, path, &node),
            Mode::Root | Mode::Field | Mode::Item => {
                self.structural_rules(map, path, mode, &node);
                for (i, branch) in node.any_of.iter().enumerate() {
                    self.completeness(&node, branch, path, &index(path, "anyOf", i));
                }
                for (i, branch) in node.all_of.iter().enumerate() {
                    self.completeness(&node, branch, path, &index(path, "allOf", i));
                }
                for (i, branch) in node.one_of.iter().enumerate() {
                    self.completeness(&node, branch, path, &index(path, "oneOf", i));
                }
                if let Some(not) = &node.not {
                    self.completeness(&node, not, path, &child(path, "not"));
                }
            }
        }
        node
    }

    /// Type, extensions, properties, additionalProperties and items.
    fn shape(&mut self, map: &Map<String, Value>, path: &str, nested: bool, node: &mut Node) {
        match map.get("type") {
            None => {}
            Some(Value::String(name)) if name == "null" => self.forbidden(
                child(path, "type"),
                "type cannot be set to null, use nullable as an alternative",
            ),
            Some(Value::String(name)) => match JsonType::parse(name) {
                Some(kind) => node.kind = Some(kind),
                None => self.errors.push(FieldError::not_supported(
                    child(path, "type"),
                    &json!(name),
                    TYPES,
                )),
            },
            Some(other) => self.invalid(child(path, "type"), other, "must be a string"),
        }
        node.format = map.get("format").and_then(Value::as_str).map(str::to_owned);
        node.nullable = self.flag(map, path, "nullable");
        node.ext.preserve_unknown = self.flag(map, path, "x-kubernetes-preserve-unknown-fields");
        node.ext.int_or_string = self.flag(map, path, "x-kubernetes-int-or-string");
        node.ext.embedded = self.flag(map, path, "x-kubernetes-embedded-resource");
        node.default = map.get("default").cloned();
        let (field_mode, item_mode) = if nested {
            (Mode::Nested, Mode::Nested)
        } else {
            (Mode::Field, Mode::Item)
        };
        match map.get("properties") {
            None => {}
            Some(Value::Object(properties)) => {
                for (name, schema) in properties {
                    let property = self.parse(schema, &key(path, "properties", name), field_mode);
                    node.properties.insert(name.clone(), property);
                }
            }
            Some(other) => self.invalid(child(path, "properties"), other, "must be an object"),
        }
        match map.get("additionalProperties") {
            None => {}
            Some(Value::Bool(true)) => node.additional_any = true,
            Some(Value::Bool(false)) => self.forbidden(
                child(path, "additionalProperties"),
                "additionalProperties: false is not allowed in structural schemas, pruning drops unknown fields",
            ),
            Some(schema) => {
                let additional = self.parse(schema, &child(path, "additionalProperties"), field_mode);
                node.additional = Some(Box::new(additional));
            }
        }
        match map.get("items") {
            None => {}
            Some(Value::Array(_)) => self.forbidden(
                child(path, "items"),
                "items must be a schema object and not an array",
            ),
            Some(schema) => {
                node.items = Some(Box::new(self.parse(
                    schema,
                    &child(path, "items"),
                    item_mode,
                )));
            }
        }
        let list_type = map.get("x-kubernetes-list-type").and_then(Value::as_str);
        let map_keys = self.strings(map, path, "x-kubernetes-list-map-keys");
        node.list = match list_type {
            Some("set") => ListType::Set,
            Some("map") => ListType::Map(map_keys),
            _ => ListType::Atomic,
        };
    }

    /// The keywords that restrict values without shaping them.
    fn value_validations(&mut self, map: &Map<String, Value>, path: &str, node: &mut Node) {
        node.required = self.strings(map, path, "required");
        node.enumeration = match map.get("enum") {
            None => None,
            Some(Value::Array(values)) => Some(values.clone()),
            Some(other) => {
                self.invalid(child(path, "enum"), other, "must be a list");
                None
            }
        };
        let exclusive_minimum = self.flag(map, path, "exclusiveMinimum");
        let exclusive_maximum = self.flag(map, path, "exclusiveMaximum");
        node.minimum = self.number(map, path, "minimum").map(|limit| Bound {
            limit,
            exclusive: exclusive_minimum,
        });
        node.maximum = self.number(map, path, "maximum").map(|limit| Bound {
            limit,
            exclusive: exclusive_maximum,
        });
        node.multiple_of = self.number(map, path, "multipleOf");
        if let Some(factor) = node.multiple_of
            && factor <= 0.0
        {
            self.invalid(
                child(path, "multipleOf"),
                &json!(factor),
                "must be greater than zero",
            );
        }
        node.min_length = self.count(map, path, "minLength");
        node.max_length = self.count(map, path, "maxLength");
        node.min_items = self.count(map, path, "minItems");
        node.max_items = self.count(map, path, "maxItems");
        node.min_properties = self.count(map, path, "minProperties");
        node.max_properties = self.count(map, path, "maxProperties");
        if map.get("uniqueItems") == Some(&Value::Bool(true)) {
            self.forbidden(
                child(path, "uniqueItems"),
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            );
        }
        node.any_of = self.branches(map, path, "anyOf");
        node.all_of = self.branches(map, path, "allOf");
        node.one_of = self.branches(map, path, "oneOf");
        node.not = map
            .get("not")
            .map(|schema| Box::new(self.parse(schema, &child(path, "not"), Mode::Nested)));
    }

    fn branches(&mut self, map: &Map<String, Value>, path: &str, name: &str) -> Vec<Node> {
        let Some(raw) = map.get(name) else {
            return Vec::new();
        };
        if name == "anyOf" && is_int_or_string_any_of(raw) {
            let typed = |kind| Node {
                kind: Some(kind),
                ..Node::default()
            };
            return vec![typed(JsonType::Integer), typed(JsonType::String)];
        }
        let Some(schemas) = raw.as_array() else {
            self.invalid(child(path, name), raw, "must be a list of schemas");
            return Vec::new();
        };
        schemas
            .iter()
            .enumerate()
            .map(|(i, schema)| self.parse(schema, &index(path, name, i), Mode::Nested))
            .collect()
    }

    /// The rules of a node that specifies the shape of the data.
    fn structural_rules(&mut self, map: &Map<String, Value>, path: &str, mode: Mode, node: &Node) {
        let type_path = child(path, "type");
        let type_value = map.get("type").cloned().unwrap_or(Value::Null);
        if node.kind == Some(JsonType::Array) && node.items.is_none() && !map.contains_key("items")
        {
            self.required(child(path, "items"), "must be specified");
        }
        if node.ext.embedded && node.kind != Some(JsonType::Object) {
            if map.contains_key("type") {
                self.invalid(
                    type_path.clone(),
                    &type_value,
                    "must be object if x-kubernetes-embedded-resource is true",
                );
            } else {
                self.required(
                    type_path.clone(),
                    "must be object if x-kubernetes-embedded-resource is true",
                );
            }
        } else if !map.contains_key("type")
            && !node.ext.int_or_string
            && (mode == Mode::Root || !node.ext.preserve_unknown)
        {
            let detail = match mode {
                Mode::Root => "must not be empty at the root",
                Mode::Item => "must not be empty for specified array items",
                Mode::Field | Mode::Nested => "must not be empty for specified object fields",
            };
            self.required(type_path.clone(), detail);
        }
        let has_additional = node.additional.is_some() || node.additional_any;
        if node.ext.embedded && has_additional {
            self.required(
                child(path, "additionalProperties"),
                "must not be used if x-kubernetes-embedded-resource is set",
            );
        }
        if mode == Mode::Root {
            if node.kind.is_some_and(|k| k != JsonType::Object) {
                self.invalid(type_path, &type_value, "must be object at the root");
            }
            if has_additional {
                self.forbidden(
                    child(path, "additionalProperties"),
                    "must not be used at the root",
                );
            }
        }
        // `additionalProperties: true` next to properties is tolerated: it adds nothing to prune by.
        if node.additional.is_some() && !node.properties.is_empty() {
            self.forbidden(
                child(path, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            );
        }
        if node.ext.int_or_string && node.ext.preserve_unknown {
            self.invalid(
                child(path, "x-kubernetes-preserve-unknown-fields"),
                &json!(true),
                "must be false if x-kubernetes-int-or-string is true",
            );
        }
        if node.ext.int_or_string && node.ext.embedded {
            self.invalid(
                child(path, "x-kubernetes-embedded-resource"),
                &json!(true),
                "must be false if x-kubernetes-int-or-string is true",
            );
        }
        if mode == Mode::Root || node.ext.embedded {
            self.resource_fields(node, path);
        }
        if mode == Mode::Root {
            self.root_metadata(map, path);
        }
        if node.ext.embedded && !node.ext.preserve_unknown && node.properties.is_empty() {
            self.required(
                child(path, "properties"),
                "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
            );
        }
        self.list_rules(map, path, node);
    }

    fn resource_fields(&mut self, node: &Node, path: &str) {
        for (field, kind) in [
            ("kind", JsonType::String),
            ("apiVersion", JsonType::String),
            ("metadata", JsonType::Object),
        ] {
            if let Some(property) = node.properties.get(field)
                && property.kind != Some(kind)
            {
                let found = property.kind.map_or("", JsonType::name);
                self.invalid(
                    child(&key(path, "properties", field), "type"),
                    &json!(found),
                    &format!("must be {}", kind.name()),
                );
            }
        }
    }

    /// The resource's metadata belongs to the API server: a schema may only restrict `name` and `generateName`.
    fn root_metadata(&mut self, map: &Map<String, Value>, path: &str) {
        let Some(metadata) = map
            .get("properties")
            .and_then(|p| p.get("metadata"))
            .and_then(Value::as_object)
        else {
            return;
        };
        let only_names = metadata
            .iter()
            .all(|(keyword, value)| match keyword.as_str() {
                "type" => true,
                "properties" => value
                    .as_object()
                    .is_some_and(|p| p.keys().all(|k| k == "name" || k == "generateName")),
                _ => false,
            });
        if !only_names {
            self.forbidden(
                key(path, "properties", "metadata"),
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            );
        }
    }

    fn list_rules(&mut self, map: &Map<String, Value>, path: &str, node: &Node) {
        let list_path = child(path, "x-kubernetes-list-type");
        let keys_path = child(path, "x-kubernetes-list-map-keys");
        let list_type = match map.get("x-kubernetes-list-type") {
            None => None,
            Some(Value::String(name)) if ["atomic", "set", "map"].contains(&name.as_str()) => {
                Some(name.as_str())
            }
            Some(other) => {
                self.errors.push(FieldError::not_supported(
                    list_path,
                    other,
                    &["atomic", "set", "map"],
                ));
                return;
            }
        };
        if list_type.is_some() && node.kind != Some(JsonType::Array) {
            self.invalid(
                list_path,
                &json!(list_type),
                "must only be used on type=array",
            );
            return;
        }
        let items = node.items.as_deref();
        let raw_items = map.get("items");
        match (list_type, &node.list) {
            (Some("map"), ListType::Map(keys)) => self.list_map_rules(path, keys, items),
            (Some("set"), _) => {
                let nested_type = |keyword: &str| {
                    raw_items
                        .and_then(|i| i.get(keyword))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                let keyword = match items.and_then(|i| i.kind) {
                    Some(JsonType::Object) => "x-kubernetes-map-type",
                    Some(JsonType::Array) => "x-kubernetes-list-type",
                    _ => return,
                };
                let found = nested_type(keyword);
                if found != "atomic" {
                    self.invalid(
                        child(&child(path, "items"), keyword),
                        &json!(found),
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    );
                }
            }
            _ => {
                if map.contains_key("x-kubernetes-list-map-keys") {
                    self.forbidden(
                        keys_path,
                        "must not be set if x-kubernetes-list-type is not map",
                    );
                }
            }
        }
    }

    fn list_map_rules(&mut self, path: &str, keys: &[String], items: Option<&Node>) {
        let keys_path = child(path, "x-kubernetes-list-map-keys");
        if keys.is_empty() {
            self.required(
                keys_path.clone(),
                "must not be empty if x-kubernetes-list-type is map",
            );
        }
        let Some(items) = items else {
            self.required(
                child(path, "items"),
                "must have a schema if x-kubernetes-list-type is map",
            );
            return;
        };
        if items.kind != Some(JsonType::Object) {
            let found = items.kind.map_or("", JsonType::name);
            self.invalid(
                child(&child(path, "items"), "type"),
                &json!(found),
                "must be object if parent array's x-kubernetes-list-type is map",
            );
            return;
        }
        for name in keys {
            match items.properties.get(name) {
                Some(property)
                    if matches!(property.kind, Some(JsonType::Object | JsonType::Array)) =>
                {
                    let found = property.kind.map_or("", JsonType::name);
                    self.invalid(
                        child(&key(&child(path, "items"), "properties", name), "type"),
                        &json!(found),
                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                    );
                }
                Some(_) => {}
                None => self.invalid(
                    keys_path.clone(),
                    &json!(keys),
                    "entries must all be names of item properties",
                ),
            }
        }
    }

    /// The rules of a value-validation node: it restricts values only, the shape is the structural node's.
    fn nested_rules(&mut self, map: &Map<String, Value>, path: &str, node: &Node) {
        let undefined = [
            "additionalProperties",
            "default",
            "x-kubernetes-preserve-unknown-fields",
            "x-kubernetes-list-type",
            "x-kubernetes-map-type",
        ];
        if map.contains_key("type") {
            self.forbidden(child(path, "type"), "must be empty to be structural");
        }
        for keyword in undefined {
            if map.contains_key(keyword) {
                self.forbidden(child(path, keyword), "must be undefined to be structural");
            }
        }
        for keyword in ["title", "description", "x-kubernetes-list-map-keys"] {
            let empty = match map.get(keyword) {
                None | Some(Value::Null) => true,
                Some(Value::String(text)) => text.is_empty(),
                Some(Value::Array(items)) => items.is_empty(),
                Some(_) => false,
            };
            if !empty {
                self.forbidden(child(path, keyword), "must be empty to be structural");
            }
        }
        let flags = [
            ("nullable", node.nullable),
            ("x-kubernetes-embedded-resource", node.ext.embedded),
            ("x-kubernetes-int-or-string", node.ext.int_or_string),
        ];
        for (keyword, set) in flags {
            if set {
                self.forbidden(child(path, keyword), "must be false to be structural");
            }
        }
        if node.properties.contains_key("metadata") {
            self.forbidden(
                key(path, "properties", "metadata"),
                "must not be specified in a nested context",
            );
        }
    }

    /// Every field a value validation speaks of must be specified by the structural schema as well.
    fn completeness(&mut self, structural: &Node, nested: &Node, s_path: &str, v_path: &str) {
        for (i, branch) in nested.any_of.iter().enumerate() {
            self.completeness(structural, branch, s_path, &index(v_path, "anyOf", i));
        }
        for (i, branch) in nested.all_of.iter().enumerate() {
            self.completeness(structural, branch, s_path, &index(v_path, "allOf", i));
        }
        for (i, branch) in nested.one_of.iter().enumerate() {
            self.completeness(structural, branch, s_path, &index(v_path, "oneOf", i));
        }
        if let Some(not) = &nested.not {
            self.completeness(structural, not, s_path, &child(v_path, "not"));
        }
        if let Some(items) = &nested.items {
            let s_items = child(s_path, "items");
            let v_items = child(v_path, "items");
            match &structural.items {
                Some(s) => self.completeness(s, items, &s_items, &v_items),
                None => self.required(s_items, &format!("because it is defined in {v_items}")),
            }
        }
        for (name, property) in &nested.properties {
            let s_property = key(s_path, "properties", name);
            let v_property = key(v_path, "properties", name);
            match structural
                .properties
                .get(name)
                .or(structural.additional.as_deref())
            {
                Some(s) => self.completeness(s, property, &s_property, &v_property),
                None => self.required(
                    s_property,
                    &format!("because it is defined in {v_property}"),
                ),
            }
        }
    }

    /// Each default must survive pruning unchanged and validate against its own node.
    fn defaults(&mut self, node: &Node, path: &str, in_metadata: bool) {
        if let Some(default) = &node.default {
            let default_path = child(path, "default");
            if in_metadata {
                self.forbidden(default_path, "must not be set inside metadata");
            } else {
                let mut pruned = default.clone();
                if prune::prune(&mut pruned, node, node.ext.embedded).is_empty() {
                    let errors = validate::validate(default, node, &default_path);
                    self.errors.extend(errors);
                } else {
                    self.invalid(default_path, default, "must not have unknown fields");
                }
            }
        }
        for (name, property) in &node.properties {
            let metadata = in_metadata || (path.is_empty() && name == "metadata");
            self.defaults(property, &key(path, "properties", name), metadata);
        }
        if let Some(additional) = &node.additional {
            self.defaults(
                additional,
                &child(path, "additionalProperties"),
                in_metadata,
            );
        }
        if let Some(items) = &node.items {
            self.defaults(items, &child(path, "items"), in_metadata);
        }
    }
}
