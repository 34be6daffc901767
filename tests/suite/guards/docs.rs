//! The docs that are made from code must still be what the code makes: the
//! settings tables of docs/limits.md come from the one declaration of the
//! settings, the probe table of docs/tracing.md from the one declaration of the
//! events, the README's exercises from the bundled scenarios. And the listings that print them end quietly when their reader does.

use std::path::Path;

/// The text of `page` between `<!-- NAME:begin ... -->` and `<!-- NAME:end -->`.
fn between_markers(page: &str, name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(page);
    let text = std::fs::read_to_string(&path).unwrap();
    let begin = format!("<!-- {name}:begin");
    let start = text
        .find(&begin)
        .unwrap_or_else(|| panic!("{page} has the {name}:begin marker"));
    let after_marker = start + text[start..].find("-->").unwrap() + "-->".len();
    let end = text
        .find(&format!("<!-- {name}:end -->"))
        .unwrap_or_else(|| panic!("{page} has the {name}:end marker"));
    text[after_marker..end].trim().to_owned()
}

#[test]
fn the_settings_tables_in_limits_md_are_the_generated_ones() {
    assert_eq!(
        between_markers("docs/limits.md", "settings"),
        simulator_api::settings::markdown_table().trim(),
        "docs/limits.md is out of date: paste the output of \
         `cargo run -- settings --markdown` between its settings markers"
    );
}

#[test]
fn the_probe_table_in_tracing_md_is_the_generated_one() {
    assert_eq!(
        between_markers("docs/tracing.md", "probes"),
        simulator_api::events::markdown_table().trim(),
        "docs/tracing.md is out of date: paste the output of \
         `cargo run -- probes` between its probes markers"
    );
}

#[test]
fn the_exercises_in_the_readme_are_the_generated_list_and_each_links_its_page() {
    assert_eq!(
        between_markers("README.md", "exercises"),
        system_simulator::workshop::markdown_list().unwrap().trim(),
        "README.md is out of date: paste the output of \
         `cargo run -- workshop list --markdown` between its exercises markers"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for s in simulator_service::scenario::bundled().unwrap() {
        let page = system_simulator::workshop::figures::page_of(root, &s).unwrap();
        assert!(page.exists(), "the README links {}", page.display());
    }
}

#[test]
fn every_scenario_fix_in_the_docs_is_a_valid_config_body() {
    // The README shows the seed's fix as a curl body; it must be one the server takes.
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let body = readme
        .lines()
        .find_map(|l| {
            l.split("-d '")
                .nth(1)
                .and_then(|rest| rest.split('\'').next())
        })
        .expect("the README shows a PUT /admin/config body");
    let update: simulator_api::SettingsUpdate = serde_json::from_str(body).unwrap();
    simulator_api::Settings::default()
        .changed_live(&update)
        .unwrap();
}

/// Every `/stats` counter the events declare is in the report's JSON schema (the
/// server's counters of a run) and has its row in docs/api.md.
#[test]
fn every_declared_counter_is_in_the_report_schema_and_the_api_docs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("simulator-clients/schema/report.schema.json")).unwrap(),
    )
    .unwrap();
    let server = &schema["properties"]["server"]["oneOf"][0];
    let required: Vec<&str> = server["required"]
        .as_array()
        .expect("the schema's server counts list what they require")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    let api = std::fs::read_to_string(root.join("docs/api.md")).unwrap();
    for event in simulator_api::events::EVENTS {
        for counter in event.counters {
            assert!(
                required.contains(&counter.field) && !server["properties"][counter.field].is_null(),
                "report.schema.json's server counts lack {}",
                counter.field
            );
            assert!(
                api.contains(&format!("`{}`", counter.field)),
                "docs/api.md's /stats table lacks {}",
                counter.field
            );
        }
    }
}

/// `curl --json` came in curl 7.82 (March 2022); Ubuntu 22.04 ships 7.81, so a
/// page that sends JSON spells the header and the body out.
#[test]
fn no_page_needs_curl_7_82() {
    let mut found = Vec::new();
    for (page, text) in crate::common::pages_read() {
        for (n, line) in text.lines().enumerate() {
            if line.contains("curl") && line.contains(" --json") {
                found.push(format!("{page}:{}: {line}", n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "curl --json needs curl 7.82:\n{}",
        found.join("\n")
    );
}

/// `settings | head -1` and the like: a listing whose reader has gone ends with
/// success and says nothing, where `println!` used to panic on the closed pipe
/// (a backtrace under the line `head` printed).
#[test]
fn a_listing_whose_reader_left_ends_quietly() {
    use std::process::{Command, Stdio};
    for listing in [
        &["settings"][..],
        &["settings", "--markdown"],
        &["scenarios"],
        &["probes"],
        &["workshop", "list"],
        // Nothing listens on port 1: the tap's check is refused at once.
        &["doctor", "--target", "http://127.0.0.1:1"],
    ] {
        // The read end closed before the listing starts: its first write fails.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(crate::common::BIN)
            .args(listing)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stderr.trim().is_empty(),
            "{listing:?}: {:?}\n{stderr}",
            out.status
        );
    }
}
