//! The live page: one self-contained HTML file (`page.html`: its CSS and script
//! inline, nothing fetched from elsewhere, so it works in a classroom offline),
//! with the request-path diagram of `assets/` embedded at build time, the same
//! SVG `tools/diagram` draws from its source, so the page and the picture in
//! the README cannot drift apart. The script annotates the diagram's nodes (found
//! by their Graphviz names) with each part's figures.

use std::sync::OnceLock;

use axum::http::header;
use axum::response::IntoResponse;

const TEMPLATE: &str = include_str!("page.html");
const DIAGRAM: &str = include_str!("../../../../assets/system-simulator-diagram.svg");
/// Where the diagram goes in the template.
const DIAGRAM_SLOT: &str = "<!-- diagram -->";

/// The page, assembled once.
pub fn html() -> &'static str {
    static PAGE: OnceLock<String> = OnceLock::new();
    PAGE.get_or_init(|| {
        // The SVG without its XML prolog and doctype: inline SVG starts at <svg.
        let svg = DIAGRAM.find("<svg").map_or("", |at| &DIAGRAM[at..]);
        TEMPLATE.replacen(DIAGRAM_SLOT, svg, 1)
    })
}

pub async fn serve() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        html(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_carries_the_diagram_and_fetches_nothing_from_elsewhere() {
        let page = html();
        assert!(!page.contains(DIAGRAM_SLOT));
        for node in ["admission", "persistence", "store", "net_out", "canary"] {
            assert!(page.contains(&format!("<title>{node}</title>")), "{node}");
        }
        // Namespaces name, they do not fetch; anything that loads must be ours.
        for outside in [
            "src=\"http",
            "href=\"http",
            "url(http",
            "@import",
            "//cdn",
            "fetch(\"http",
        ] {
            assert!(
                !page.contains(outside),
                "the page loads from elsewhere: {outside}"
            );
        }
    }
}
