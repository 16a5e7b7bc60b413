use serde_json::{Value, json};

use super::Schema;
use crate::registry::api_error::FieldError;

/// Each error as the Status message prints it (`field: body`).
fn messages(errors: &[FieldError]) -> Vec<String> {
    errors
        .iter()
        .map(|e| format!("{}: {}", e.field, e.body()))
        .collect()
}

fn compile(schema: &Value) -> Schema {
    match Schema::compile(schema) {
        Ok(schema) => schema,
        Err(errors) => panic!("does not compile: {:?}", messages(&errors)),
    }
}

fn compile_errors(schema: &Value) -> Vec<String> {
    match Schema::compile(schema) {
        Ok(_) => panic!("compiles: {schema}"),
        Err(errors) => messages(&errors),
    }
}

/// A schema with `spec` holding the given properties.
fn spec(properties: &Value) -> Schema {
    compile(
        &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": properties}}}),
    )
}

fn errors_of(schema: &Schema, spec: &Value) -> Vec<String> {
    messages(&schema.validate(&json!({"spec": spec})))
}

#[test]
fn toolforge_schemaless_crd_keeps_every_field() {
    let schema = compile(&json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    let record = json!({
        "apiVersion": "jobs-api.toolforge.org/v1", "kind": "Job",
        "metadata": {"name": "backup", "namespace": "tool-test", "labels": {"app": "x"}},
        "spec": {"job_name": "backup", "tool_name": "test", "cmd": "./backup.sh",
            "image": {"short_name": "python3.11"}, "job_type": "scheduled", "schedule": "@daily",
            "retry": 0, "mount": "all", "emails": "none", "port": null, "envvars": [{"name": "A"}]},
    });
    let mut object = record.clone();
    assert!(schema.default_and_prune(&mut object).is_empty());
    assert_eq!(object, record);
    assert!(schema.validate(&object).is_empty());
}

#[test]
fn root_must_be_an_object() {
    assert_eq!(
        compile_errors(&json!({"type": "string"})),
        ["type: Invalid value: \"string\": must be object at the root"]
    );
    assert_eq!(
        compile_errors(&json!({"x-kubernetes-preserve-unknown-fields": true})),
        ["type: Required value: must not be empty at the root"]
    );
}

#[test]
fn specified_fields_and_items_need_a_type() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "a": {"description": "no type"},
        "b": {"type": "array", "items": {"minLength": 1}},
        "c": {"type": "array"},
        "d": {"type": "widget"},
        "e": {"type": "null"},
    }}}});
    assert_eq!(
        compile_errors(&schema),
        [
            "properties[spec].properties[a].type: Required value: must not be empty for specified object fields",
            "properties[spec].properties[b].items.type: Required value: must not be empty for specified array items",
            "properties[spec].properties[c].items: Required value: must be specified",
            "properties[spec].properties[d].type: Unsupported value: \"widget\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"",
            "properties[spec].properties[e].type: Forbidden: type cannot be set to null, use nullable as an alternative",
        ]
    );
}

#[test]
fn preserve_unknown_and_int_or_string_fields_may_omit_the_type() {
    compile(&json!({"type": "object", "properties": {
        "any": {"x-kubernetes-preserve-unknown-fields": true},
        "port": {"x-kubernetes-int-or-string": true},
        "spelled": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
    }}));
}

#[test]
fn additional_properties_rules() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "object", "additionalProperties": false},
        "b": {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": {"type": "string"}},
    }, "additionalProperties": {"type": "string"}});
    assert_eq!(
        compile_errors(&schema),
        [
            "properties[a].additionalProperties: Forbidden: additionalProperties: false is not allowed in structural schemas, pruning drops unknown fields",
            "properties[b].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
            "additionalProperties: Forbidden: must not be used at the root",
            "additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
        ]
    );
}

#[test]
fn unsupported_keywords_are_forbidden() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "string", "$ref": "#/definitions/x"},
        "b": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
        "c": {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
    }, "definitions": {}});
    assert_eq!(
        compile_errors(&schema),
        [
            "definitions: Forbidden: definitions is not supported",
            "properties[a].$ref: Forbidden: $ref is not supported",
            "properties[b].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            "properties[c].patternProperties: Forbidden: patternProperties is not supported",
        ]
    );
}

#[test]
fn root_metadata_may_only_restrict_name_and_generate_name() {
    compile(
        &json!({"type": "object", "properties": {"metadata": {"type": "object",
        "properties": {"name": {"type": "string", "maxLength": 10}}}}}),
    );
    assert_eq!(
        compile_errors(
            &json!({"type": "object", "properties": {"metadata": {"type": "object",
            "properties": {"labels": {"type": "object"}}}}})
        ),
        [
            "properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
        ]
    );
    assert_eq!(
        compile_errors(&json!({"type": "object", "properties": {"kind": {"type": "integer"}}})),
        ["properties[kind].type: Invalid value: \"integer\": must be string"]
    );
}

#[test]
fn value_validations_may_not_shape() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"a": {"type": "string"}},
        "anyOf": [{"type": "object", "required": ["a"]}, {"properties": {"b": {"minLength": 1}}}],
        "not": {"nullable": true, "default": {}},
    }}});
    assert_eq!(
        compile_errors(&schema),
        [
            "properties[spec].anyOf[0].type: Forbidden: must be empty to be structural",
            "properties[spec].not.default: Forbidden: must be undefined to be structural",
            "properties[spec].not.nullable: Forbidden: must be false to be structural",
            "properties[spec].properties[b]: Required value: because it is defined in properties[spec].anyOf[1].properties[b]",
        ]
    );
}

#[test]
fn defaults_must_validate_and_be_pruned() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "replicas": {"type": "integer", "default": "one"},
        "tls": {"type": "object", "properties": {"on": {"type": "boolean"}}, "default": {"on": true, "extra": 1}},
        "port": {"type": "integer", "minimum": 1, "default": 0},
    }}}});
    assert_eq!(
        compile_errors(&schema),
        [
            "properties[spec].properties[port].default: Invalid value: 0:  in body should be greater than or equal to 1",
            "properties[spec].properties[replicas].default: Invalid value: \"string\":  in body must be of type integer: \"string\"",
            "properties[spec].properties[tls].default: Invalid value: {\"extra\":1,\"on\":true}: must not have unknown fields",
        ]
    );
}

#[test]
fn list_type_rules() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "b": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"], "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "c": {"type": "string", "x-kubernetes-list-type": "set"},
        "d": {"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}},
    }});
    assert_eq!(
        compile_errors(&schema),
        [
            "properties[a].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
            "properties[b].x-kubernetes-list-map-keys: Invalid value: [\"id\"]: entries must all be names of item properties",
            "properties[c].x-kubernetes-list-type: Invalid value: \"set\": must only be used on type=array",
            "properties[d].x-kubernetes-list-type: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\"",
        ]
    );
}

#[test]
fn prunes_nested_unknown_fields_with_their_paths() {
    let schema = spec(&json!({
        "name": {"type": "string"},
        "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    }));
    let mut object = json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a", "whatever": 1},
        "spec": {"name": "n", "foo": 1, "items": [{"name": "a"}, {"name": "b", "bar": {"z": 1}}],
            "labels": {"any": "thing"}},
        "status": {"ready": true}});
    assert_eq!(
        schema.default_and_prune(&mut object),
        ["spec.foo", "spec.items[1].bar", "status"]
    );
    assert_eq!(
        object,
        json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a", "whatever": 1},
            "spec": {"name": "n", "items": [{"name": "a"}, {"name": "b"}], "labels": {"any": "thing"}}})
    );
}

#[test]
fn nested_preserve_unknown_keeps_unknowns_but_prunes_specified_children() {
    let schema = spec(&json!({
        "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"strict": {"type": "object", "properties": {"a": {"type": "string"}}}}},
    }));
    let mut object = json!({"spec": {"config": {"free": {"deep": [1, {"x": 2}]}, "strict": {"a": "1", "b": 2}}}});
    assert_eq!(
        schema.default_and_prune(&mut object),
        ["spec.config.strict.b"]
    );
    assert_eq!(
        object,
        json!({"spec": {"config": {"free": {"deep": [1, {"x": 2}]}, "strict": {"a": "1"}}}})
    );
}

#[test]
fn embedded_resources_keep_type_and_metadata() {
    let schema = spec(&json!({
        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
            "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}},
        "raw": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
    }));
    let mut object = json!({"spec": {
        "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}}, "spec": {"x": "1", "y": 2}, "junk": 1},
        "raw": {"kind": "", "anything": {"goes": true}}}});
    assert_eq!(
        schema.default_and_prune(&mut object),
        ["spec.template.junk", "spec.template.spec.y"]
    );
    assert_eq!(
        object["spec"]["template"],
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}}, "spec": {"x": "1"}})
    );
    assert_eq!(
        messages(&schema.validate(&object)),
        [
            "spec.raw.apiVersion: Required value: must not be empty",
            "spec.raw.kind: Invalid value: \"\": must not be empty",
        ]
    );
    assert_eq!(
        compile_errors(
            &json!({"type": "object", "properties": {"e": {"x-kubernetes-embedded-resource": true}}})
        ),
        [
            "properties[e].type: Required value: must be object if x-kubernetes-embedded-resource is true",
            "properties[e].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ]
    );
}

#[test]
fn int_or_string_accepts_both_and_nothing_else() {
    let schema = spec(&json!({"port": {"x-kubernetes-int-or-string": true}}));
    assert!(errors_of(&schema, &json!({"port": 8080})).is_empty());
    assert!(errors_of(&schema, &json!({"port": "http"})).is_empty());
    assert_eq!(
        errors_of(&schema, &json!({"port": true})),
        [
            "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\""
        ]
    );
    assert_eq!(
        compile_errors(
            &json!({"type": "object", "properties": {"p": {"x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true}}})
        ),
        [
            "properties[p].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true"
        ]
    );
}

#[test]
fn defaults_fill_absent_fields_only_and_nest() {
    let schema = spec(&json!({
        "replicas": {"type": "integer", "default": 1},
        "mode": {"type": "string", "default": "fast"},
        "tls": {"type": "object", "default": {}, "properties": {
            "port": {"type": "integer", "default": 443},
            "ca": {"type": "object", "properties": {"name": {"type": "string", "default": "root"}}}}},
        "ports": {"type": "array", "items": {"type": "object", "properties": {"protocol": {"type": "string", "default": "TCP"}}}},
    }));
    let mut object = json!({"spec": {"mode": "slow", "ports": [{}, {"protocol": "UDP"}]}});
    assert!(schema.default_and_prune(&mut object).is_empty());
    assert_eq!(
        object,
        json!({"spec": {"replicas": 1, "mode": "slow", "tls": {"port": 443},
            "ports": [{"protocol": "TCP"}, {"protocol": "UDP"}]}})
    );
    let mut nested = json!({"spec": {"tls": {"ca": {}}}});
    schema.default_and_prune(&mut nested);
    assert_eq!(
        nested["spec"]["tls"],
        json!({"port": 443, "ca": {"name": "root"}})
    );
}

#[test]
fn nulls_follow_nullable_and_defaults() {
    let schema = spec(&json!({
        "defaulted": {"type": "string", "default": "d"},
        "nullable": {"type": "string", "nullable": true, "default": "d"},
        "plain": {"type": "string"},
        "list": {"type": "array", "items": {"type": "string"}},
    }));
    let mut object =
        json!({"spec": {"defaulted": null, "nullable": null, "plain": null, "list": ["a", null]}});
    schema.default_and_prune(&mut object);
    assert_eq!(
        object,
        json!({"spec": {"defaulted": "d", "nullable": null, "list": ["a", null]}})
    );
    assert_eq!(
        messages(&schema.validate(&object)),
        [
            "spec.list[1]: Invalid value: \"null\": spec.list[1] in body must be of type string: \"null\""
        ]
    );
}

#[test]
fn type_mismatch_names_the_json_type_found() {
    let schema = spec(
        &json!({"replicas": {"type": "integer"}, "ratio": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}}}),
    );
    assert_eq!(
        errors_of(
            &schema,
            &json!({"replicas": "string", "ratio": 2, "tags": {"a": 1}})
        ),
        [
            "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
            "spec.tags: Invalid value: \"object\": spec.tags in body must be of type array: \"object\"",
        ]
    );
    assert_eq!(
        errors_of(&schema, &json!("nope")),
        ["spec: Invalid value: \"string\": spec in body must be of type object: \"string\""]
    );
}

#[test]
fn integer_accepts_integral_numbers_only() {
    let schema = spec(&json!({"replicas": {"type": "integer"}}));
    assert!(errors_of(&schema, &json!({"replicas": 2.0})).is_empty());
    assert_eq!(
        errors_of(&schema, &json!({"replicas": 1.5})),
        [
            "spec.replicas: Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\"",
            "spec.replicas: Invalid value: 1.5: spec.replicas in Checked must be of type integer",
        ]
    );
}

#[test]
fn required_fields() {
    let schema = compile(
        &json!({"type": "object", "required": ["spec"], "properties": {"spec": {
        "type": "object", "required": ["image", "cmd"],
        "properties": {"image": {"type": "string"}, "cmd": {"type": "string"}}}}}),
    );
    assert_eq!(
        messages(&schema.validate(&json!({}))),
        ["spec: Required value"]
    );
    assert_eq!(
        messages(&schema.validate(&json!({"spec": {"cmd": "x"}}))),
        ["spec.image: Required value"]
    );
}

#[test]
fn enum_lists_the_supported_values() {
    let schema = spec(
        &json!({"job_type": {"type": "string", "enum": ["one-off", "scheduled"]},
        "level": {"type": "integer", "enum": [1, 2]}}),
    );
    assert!(errors_of(&schema, &json!({"job_type": "scheduled", "level": 2.0})).is_empty());
    assert_eq!(
        errors_of(&schema, &json!({"job_type": "daily", "level": 3})),
        [
            "spec.job_type: Unsupported value: \"daily\": supported values: \"one-off\", \"scheduled\"",
            "spec.level: Unsupported value: 3: supported values: \"1\", \"2\"",
        ]
    );
}

#[test]
fn numeric_bounds_and_multiples() {
    let schema = spec(&json!({
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1.5, "exclusiveMaximum": true},
        "step": {"type": "integer", "multipleOf": 5},
    }));
    assert!(errors_of(&schema, &json!({"replicas": 1, "ratio": 0.5, "step": 10})).is_empty());
    assert_eq!(
        errors_of(&schema, &json!({"replicas": 0, "ratio": 0, "step": 7})),
        [
            "spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0",
            "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
            "spec.step: Invalid value: 7: spec.step in body should be a multiple of 5",
        ]
    );
    assert_eq!(
        errors_of(&schema, &json!({"replicas": 11, "ratio": 1.5})),
        [
            "spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than 1.5",
            "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
        ]
    );
}

#[test]
fn string_lengths_count_characters() {
    let schema = spec(&json!({"name": {"type": "string", "minLength": 2, "maxLength": 5}}));
    assert!(errors_of(&schema, &json!({"name": "ééééé"})).is_empty());
    assert_eq!(
        errors_of(&schema, &json!({"name": "a"})),
        ["spec.name: Invalid value: \"a\": spec.name in body should be at least 2 chars long"]
    );
    assert_eq!(
        errors_of(&schema, &json!({"name": "abcdef"})),
        ["spec.name: Too long: may not be more than 5 bytes"]
    );
}

#[test]
fn item_and_property_counts() {
    let schema = spec(&json!({
        "args": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
        "env": {"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 1, "maxProperties": 1},
    }));
    assert_eq!(
        errors_of(&schema, &json!({"args": [], "env": {}})),
        [
            "spec.args: Invalid value: 0: spec.args in body should have at least 1 items",
            "spec.env: Invalid value: 0: spec.env in body should have at least 1 properties",
        ]
    );
    let errors =
        schema.validate(&json!({"spec": {"args": ["a", "b", "c"], "env": {"A": "1", "B": "2"}}}));
    assert_eq!(
        messages(&errors),
        [
            "spec.args: Too many: 3: must have at most 2 items",
            "spec.env: Too many: 2: must have at most 1 item",
        ]
    );
    assert_eq!(errors[0].reason(), "FieldValueTooMany");
}

#[test]
fn formats() {
    let schema = spec(&json!({
        "small": {"type": "integer", "format": "int32"},
        "big": {"type": "integer", "format": "int64"},
        "when": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "blob": {"type": "string", "format": "byte"},
        "mail": {"type": "string", "format": "email"},
    }));
    assert!(
        errors_of(
            &schema,
            &json!({"small": 2_147_483_647, "big": 9_007_199_254_740_993_i64,
        "when": "2026-01-02T03:04:05Z", "day": "2026-01-02", "blob": "aGk=", "mail": "unchecked"})
        )
        .is_empty()
    );
    assert_eq!(
        errors_of(
            &schema,
            &json!({"small": 2_147_483_648_i64, "big": 18_446_744_073_709_551_615_u64,
            "when": "yesterday", "day": "2026-13-01", "blob": "***"})
        ),
        [
            "spec.big: Invalid value: 18446744073709551615: spec.big in Checked must be of type integer (int64)",
            "spec.blob: Invalid value: \"***\": spec.blob in body must be of type byte: \"***\"",
            "spec.day: Invalid value: \"2026-13-01\": spec.day in body must be of type date: \"2026-13-01\"",
            "spec.small: Invalid value: 2147483648: spec.small in Checked must be of type integer (int32)",
            "spec.when: Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\"",
        ]
    );
}

#[test]
fn additional_properties_validate_every_value() {
    let schema = spec(
        &json!({"env": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}}}),
    );
    assert_eq!(
        errors_of(&schema, &json!({"env": {"A": "ok", "B": 1, "C": "long"}})),
        [
            "spec.env.B: Invalid value: \"integer\": spec.env.B in body must be of type string: \"integer\"",
            "spec.env.C: Too long: may not be more than 3 bytes",
        ]
    );
}

#[test]
fn junctors_report_on_the_nil_path() {
    let schema = spec(&json!({
        "a": {"type": "string"}, "b": {"type": "string"},
        "choice": {"type": "string", "oneOf": [{"enum": ["x"]}, {"enum": ["x", "y"]}]},
        "name": {"type": "string", "not": {"enum": ["root"]}},
    }));
    let schema_any = compile(
        &json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}}}),
    );
    assert_eq!(
        messages(&schema_any.validate(&json!({"spec": {}}))),
        [
            "<nil>: Invalid value: \"\": \"spec\" must validate at least one schema (anyOf)",
            "spec.a: Required value",
        ]
    );
    assert!(messages(&schema_any.validate(&json!({"spec": {"b": "1"}}))).is_empty());
    assert_eq!(
        errors_of(&schema, &json!({"choice": "x", "name": "root"})),
        [
            "<nil>: Invalid value: \"\": \"spec.choice\" must validate one and only one schema (oneOf). Found 2 valid alternatives",
            "<nil>: Invalid value: \"\": \"spec.name\" must not validate the schema (not)",
        ]
    );
    assert!(errors_of(&schema, &json!({"choice": "y", "name": "me"})).is_empty());
}

#[test]
fn list_sets_and_maps_reject_duplicates() {
    let schema = spec(&json!({
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
            "items": {"type": "object", "required": ["port"], "properties": {
                "port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}}}},
    }));
    let mut object = json!({"spec": {"tags": ["a", "b", "a", "a"],
        "ports": [{"port": 80}, {"port": 80, "protocol": "UDP"}, {"port": 80, "protocol": "TCP"}]}});
    schema.default_and_prune(&mut object);
    assert_eq!(
        messages(&schema.validate(&object)),
        [
            "spec.ports[2]: Duplicate value: {\"port\":80,\"protocol\":\"TCP\"}",
            "spec.tags: Duplicate value: \"a\"",
        ]
    );
}

#[test]
fn metadata_name_restrictions_are_validated() {
    let schema = compile(
        &json!({"type": "object", "properties": {"metadata": {"type": "object",
        "properties": {"name": {"type": "string", "maxLength": 5}}}}}),
    );
    let mut object = json!({"metadata": {"name": "too-long-name", "labels": {"a": "b"}}});
    assert!(schema.default_and_prune(&mut object).is_empty());
    assert_eq!(object["metadata"]["labels"], json!({"a": "b"}));
    assert_eq!(
        messages(&schema.validate(&object)),
        ["metadata.name: Too long: may not be more than 5 bytes"]
    );
}

#[test]
fn additional_properties_true_keeps_keys_but_not_their_contents() {
    let schema = spec(&json!({"extra": {"type": "object", "additionalProperties": true}}));
    let mut object = json!({"spec": {"extra": {"a": 1, "b": {"c": 2}}}});
    assert_eq!(schema.default_and_prune(&mut object), ["spec.extra.b.c"]);
    assert_eq!(object, json!({"spec": {"extra": {"a": 1, "b": {}}}}));
}
