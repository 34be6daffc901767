//! The room's page: one self-contained HTML file (`page.html`: its CSS and
//! script inline, nothing fetched from elsewhere, so it works on a classroom's
//! closed network), the same for the facilitator, a seat and the projector: the
//! board it is sent says what it may show.

use axum::http::header;
use axum::response::IntoResponse;

const PAGE: &str = include_str!("page.html");

pub async fn serve() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        PAGE,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_fetches_nothing_from_elsewhere() {
        for outside in ["src=\"http", "href=\"http", "url(http", "@import", "//cdn"] {
            assert!(
                !PAGE.contains(outside),
                "the page loads from elsewhere: {outside}"
            );
        }
    }
}
