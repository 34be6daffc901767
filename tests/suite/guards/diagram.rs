//! The system diagram (assets/system-simulator-diagram.dot, drawn by
//! `tools/diagram`) names every probe the provider defines, and its drawings
//! sit beside it, so the picture cannot fall behind the code.

use std::path::Path;

use simulator_service::server::probe_names;

fn asset(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets")
        .join(name)
}

#[test]
fn the_diagram_names_every_probe_and_its_drawings_are_there() {
    let source = std::fs::read_to_string(asset("system-simulator-diagram.dot")).unwrap();
    for probe in probe_names() {
        assert!(source.contains(probe), "the diagram lacks probe {probe}");
    }
    // dot writes `-` in text as the entity `&#45;`.
    let svg = std::fs::read_to_string(asset("system-simulator-diagram.svg"))
        .unwrap()
        .replace("&#45;", "-");
    for probe in probe_names() {
        assert!(
            svg.contains(probe),
            "the SVG is older than its source: no {probe} (run tools/diagram)"
        );
    }
    let png = std::fs::read(asset("system-simulator-diagram.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "the PNG is a PNG");
}
