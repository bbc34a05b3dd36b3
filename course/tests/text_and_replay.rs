//! Chapter 03's projection and replay rules beyond the focused test.

use course::types::{
    AgentMessage, Sections, SystemMessage, ToolResultMessage, current_system_message,
    current_system_prompt, text, text_of, user_message,
};

fn system(content: &str, sections: Option<Sections>, timestamp: u64) -> AgentMessage {
    AgentMessage::System(SystemMessage {
        content: content.to_string(),
        sections,
        timestamp,
    })
}

#[test]
fn text_of_joins_user_and_tool_result_blocks_with_newlines() {
    let mut user = user_message("one");
    user.content.push(text("two"));
    assert_eq!(text_of(&AgentMessage::User(user)), "one\ntwo");
    let result = AgentMessage::ToolResult(ToolResultMessage {
        tool_call_id: "call_1".into(),
        tool_name: "read".into(),
        content: vec![text("# tiny-pi"), text("A small agent runtime.")],
        details: None,
        is_error: false,
        timestamp: 1,
    });
    assert_eq!(text_of(&result), "# tiny-pi\nA small agent runtime.");
}

#[test]
fn a_deleted_section_added_again_goes_last() {
    let transcript = [
        system(
            "Base.",
            Some(Sections::from([("a", Some("A")), ("b", Some("B"))])),
            1,
        ),
        system("", Some(Sections::from([("a", None::<&str>)])), 2),
        system("", Some(Sections::from([("a", Some("A2"))])), 3),
    ];
    assert_eq!(
        current_system_prompt(&transcript).as_deref(),
        Some("Base.\n\nB\n\nA2")
    );
}

#[test]
fn deleting_an_unknown_section_is_harmless_and_only_empty_patches_give_empty_content() {
    let transcript = [
        system("", Some(Sections::from([("ghost", None::<&str>)])), 4),
        system("", None, 5),
    ];
    let current = current_system_message(&transcript).unwrap();
    assert_eq!(
        current,
        SystemMessage {
            content: String::new(),
            sections: None,
            timestamp: 4
        }
    );
    assert_eq!(current_system_prompt(&transcript).as_deref(), Some(""));
}

#[test]
fn replay_handles_long_transcripts() {
    let mut transcript = vec![system(
        "Base.",
        Some(Sections::from([("rules", Some("v0"))])),
        0,
    )];
    for i in 1..=50_000_u64 {
        transcript.push(AgentMessage::User(user_message(format!("turn {i}"))));
        if i % 1_000 == 0 {
            let rules = format!("v{}", i / 1_000);
            transcript.push(system(
                "",
                Some(Sections::from([("rules", Some(rules))])),
                i,
            ));
        }
    }
    assert_eq!(
        current_system_prompt(&transcript).as_deref(),
        Some("Base.\n\nv50")
    );
    assert_eq!(current_system_message(&transcript).unwrap().timestamp, 0);
}
