//! The docs that are made from code must still be what the code makes: the
//! settings tables of docs/limits.md come from the one declaration of the settings.

use std::path::Path;

const BEGIN: &str = "<!-- settings:begin";
const END: &str = "<!-- settings:end -->";

#[test]
fn the_settings_tables_in_limits_md_are_the_generated_ones() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/limits.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text
        .find(BEGIN)
        .expect("docs/limits.md has the settings:begin marker");
    let after_marker = start + text[start..].find("-->").unwrap() + "-->".len();
    let end = text
        .find(END)
        .expect("docs/limits.md has the settings:end marker");
    let in_docs = text[after_marker..end].trim();
    let generated = simulator_api::settings::markdown_table();
    assert_eq!(
        in_docs,
        generated.trim(),
        "docs/limits.md is out of date: paste the output of \
         `cargo run -- settings --markdown` between its settings markers"
    );
}

#[test]
fn every_scenario_fix_in_the_docs_is_a_valid_config_body() {
    // The README shows the seed's fix as a curl body; it must be one the server takes.
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let body = readme
        .lines()
        .find_map(|l| {
            l.split("--json '")
                .nth(1)
                .and_then(|rest| rest.split('\'').next())
        })
        .expect("the README shows a PUT /admin/config body");
    let update: simulator_api::SettingsUpdate = serde_json::from_str(body).unwrap();
    simulator_api::Settings::default()
        .changed_live(&update)
        .unwrap();
}
