//! Chapter 06, step 6.4: the edges of each validator that the four focused
//! tests leave unsaid, as the chapter's guide states them — the schema's
//! bytes in declaration order, only an object as arguments, `null` is not
//! absence, what a positive integer is (`2.0` is 2; `1e30` fits no `u64`).

use course::tool::{
    ObjectSchema, ParseError, object_schema, optional_positive_integer, optional_string,
    string_value,
};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, PartialEq, Deserialize)]
struct Request {
    value: String,
    label: Option<String>,
    limit: Option<u64>,
}

fn request_schema() -> ObjectSchema<Request> {
    object_schema(vec![
        ("value", string_value()),
        ("label", optional_string()),
        ("limit", optional_positive_integer()),
    ])
}

fn refusal(value: Value) -> ParseError {
    match request_schema().parse(&value) {
        Ok(parsed) => panic!("{value} 应该被拒绝，却解析成了 {parsed:?}"),
        Err(error) => error,
    }
}

#[test]
fn the_schema_has_the_original_bytes_in_declaration_order() {
    // `Value == Value` ignores key order, even with serde_json's
    // `preserve_order`: the bytes a provider caches are compared as text.
    assert_eq!(
        serde_json::to_string(&request_schema().json_schema()).unwrap(),
        r#"{"type":"object","properties":{"value":{"type":"string"},"label":{"type":"string"},"limit":{"type":"integer","minimum":1}},"required":["value"],"additionalProperties":false}"#,
        "JSON Schema 的字节：type、properties（按声明顺序）、required、additionalProperties"
    );
    let reversed: ObjectSchema<Request> = object_schema(vec![
        ("limit", optional_positive_integer()),
        ("label", optional_string()),
        ("value", string_value()),
    ]);
    assert_eq!(
        serde_json::to_string(&reversed.json_schema()).unwrap(),
        r#"{"type":"object","properties":{"limit":{"type":"integer","minimum":1},"label":{"type":"string"},"value":{"type":"string"}},"required":["value"],"additionalProperties":false}"#,
        "properties 跟着声明顺序走，不按字母排序"
    );
}

#[test]
fn only_an_object_can_be_arguments() {
    for value in [Value::Null, json!([]), json!("Pi"), json!(1), json!(true)] {
        let error = refusal(value.clone());
        assert_eq!(
            (error.field, error.message.as_str()),
            (None, "参数必须是 object"),
            "{value} 不是 object"
        );
    }
}

#[test]
fn optional_fields_accept_absence_but_not_null_or_the_wrong_type() {
    assert_eq!(
        refusal(json!({ "value": "Pi", "label": null })).field,
        Some("label"),
        "null 不是省略：和原版一样，可选字段的 null 被拒绝"
    );
    assert_eq!(
        refusal(json!({ "value": "Pi", "limit": null })).field,
        Some("limit")
    );
    for limit in [json!(0), json!(-1), json!(1.5), json!("2"), json!(true)] {
        assert_eq!(
            refusal(json!({ "value": "Pi", "limit": limit })).message,
            "必须是正整数",
            "limit: {limit} 不是正整数"
        );
    }
    let parsed = request_schema()
        .parse(&json!({ "value": "Pi", "limit": 2.0 }))
        .expect("2.0 在 JSON 里就是整数 2");
    assert_eq!(parsed.limit, Some(2));
    let parsed = request_schema()
        .parse(&json!({ "value": "", "limit": 1 }))
        .expect("空字符串也是 string，1 是最小的正整数");
    assert_eq!(
        parsed,
        Request {
            value: String::new(),
            label: None,
            limit: Some(1),
        }
    );
}

#[test]
fn a_positive_integer_must_fit_a_u64() {
    let limit_of = |limit: Value| {
        request_schema()
            .parse(&json!({ "value": "Pi", "limit": limit }))
            .map(|request| request.limit)
    };
    for limit in [
        json!(1e30),
        json!(18_446_744_073_709_551_616.0),
        json!(-1e30),
    ] {
        assert_eq!(
            limit_of(limit.clone()).unwrap_err().message,
            "必须是正整数",
            "limit: {limit} 放不进 u64，不能被截成 u64::MAX"
        );
    }
    assert_eq!(limit_of(json!(u64::MAX)), Ok(Some(u64::MAX)));
    assert_eq!(
        limit_of(json!(9_007_199_254_740_992.0)),
        Ok(Some(9_007_199_254_740_992)),
        "2^53 写成浮点数也是整数"
    );
}
