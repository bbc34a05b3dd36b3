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
fn helpers_stamp_the_current_time() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let stamped = user_message("hi").timestamp;
    assert!(
        (now..now + 60_000).contains(&stamped),
        "{stamped} is not now ({now})"
    );
}

#[test]
fn a_deleted_section_added_again_goes_last() {
    let transcript = [
        system(
            "Base.",
            Some(Sections::from([("a", Some("A")), ("b", Some("B"))])),
            1,
        ),
        system("", Some(Sections::from([("a", None)])), 2),
        system("", Some(Sections::from([("a", Some("A2"))])), 3),
    ];
    assert_eq!(
        current_system_prompt(&transcript).as_deref(),
        Some("Base.\n\nB\n\nA2")
    );
}

#[test]
fn sections_update_in_place_and_remove_keeps_the_others_in_order() {
    let mut sections = Sections::from([("a", Some("1")), ("b", Some("2")), ("c", Some("3"))]);
    sections.insert("a", Some("1'"));
    sections.remove("b");
    sections.insert("b", None);
    sections.remove("missing");
    let entries: Vec<(&str, Option<&str>)> = sections.iter().collect();
    assert_eq!(entries, [("a", Some("1'")), ("c", Some("3")), ("b", None)]);
    assert!(!sections.is_empty());
    for name in ["a", "b", "c"] {
        sections.remove(name);
    }
    assert!(sections.is_empty());
    assert_eq!(sections, Sections::default());
}

#[test]
fn deleting_an_unknown_section_is_harmless_and_empty_patches_give_empty_content() {
    let transcript = [
        system("", Some(Sections::from([("ghost", None)])), 4),
        system("", None, 5),
    ];
    assert_eq!(
        current_system_message(&transcript),
        Some(SystemMessage {
            content: String::new(),
            sections: None,
            timestamp: 4
        })
    );
    assert_eq!(current_system_prompt(&transcript).as_deref(), Some(""));
}

#[test]
fn a_long_transcript_replays_to_its_last_patch() {
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
                Some(Sections::from([("rules", Some(rules.as_str()))])),
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

#[test]
fn an_empty_first_content_leaves_no_separator_and_keeps_the_first_timestamp() {
    let transcript = [
        system("", Some(Sections::from([("rules", Some("R"))])), 10),
        system("Be brief.", None, 20),
    ];
    assert_eq!(
        current_system_message(&transcript),
        Some(SystemMessage {
            content: "Be brief.".to_string(),
            sections: Some(Sections::from([("rules", Some("R"))])),
            timestamp: 10,
        })
    );
    assert_eq!(
        current_system_prompt(&transcript).as_deref(),
        Some("Be brief.\n\nR")
    );
}

#[test]
fn an_empty_sections_object_replays_to_no_sections() {
    let only = system("Base.", Some(Sections::default()), 1);
    let replayed = current_system_message(std::slice::from_ref(&only)).unwrap();
    assert_eq!(replayed.sections, None);
    assert_ne!(AgentMessage::System(replayed), only);
}
