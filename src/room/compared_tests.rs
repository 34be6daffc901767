//! The rules of a seat's before and after in the room (`POST /room/compare`):
//! the seat's own and bounded, the latest of each exercise kept (at most
//! [`COMPARED_KEPT_PER_SEAT`]), the seat's latest headline on the board and
//! the figures seen by the rows' rule.

use simulator_api::room::{
    CompareReport, ComparedFigure, Happening, Viewer, COMPARED_TEXT_MAX, ROOM_COMPARED_MAX,
};

use super::*;
use crate::room::view::Looking;

const EXERCISES: [&str; 2] = ["throughput-plateau", "drill"];

fn room_of(seats: &[&str]) -> Room {
    let mut room = Room::new("key".into(), "plum-42".into(), 0);
    for seat in seats {
        let token = format!("token-of-{seat}");
        room.join(seat, "plum-42", || token.clone(), 0).unwrap();
    }
    room
}

/// A figure of a comparison, as `compare` prints one (the CSV's test too).
pub(super) fn figure(name: &str, verdict: &str) -> ComparedFigure {
    ComparedFigure {
        span: "the run".into(),
        figure: name.into(),
        before: "849 ms".into(),
        after: "10.3 ms".into(),
        change: "-98.8 % [-99.1, -45.3]".into(),
        verdict: verdict.into(),
    }
}

fn compared(seat: &str, exercise: &str, rows: Vec<ComparedFigure>) -> CompareReport {
    CompareReport {
        seat: seat.into(),
        exercise: exercise.into(),
        before: "before.isim".into(),
        after: "after.isim".into(),
        rows,
    }
}

fn send(room: &mut Room, token_of: &str, report: CompareReport, at: u64) -> Result<(), Refusal> {
    room.compare(&format!("token-of-{token_of}"), report, at)
}

fn looking(viewer: Viewer, seat: Option<&str>) -> Looking<'_> {
    Looking {
        viewer,
        seat,
        now_ms: 10,
        stuck_after_ms: 600_000,
    }
}

#[test]
fn a_comparison_is_the_seats_own_and_bounded() {
    let mut room = room_of(&["ada", "bob"]);
    let fine = || vec![figure("latency p99", "better")];
    assert!(matches!(
        send(&mut room, "bob", compared("ada", "drill", fine()), 1),
        Err(Refusal::OtherSeat { .. })
    ));
    let long_name = "x".repeat(simulator_api::trail::TRAIL_TEXT_MAX + 1);
    assert!(matches!(
        send(&mut room, "ada", compared("ada", &long_name, fine()), 1),
        Err(Refusal::BadReport(_))
    ));
    let too_many = vec![figure("latency p99", "~"); ROOM_COMPARED_MAX + 1];
    let long = vec![figure(&"p".repeat(COMPARED_TEXT_MAX + 1), "~")];
    for rows in [
        Vec::new(),
        too_many,
        long,
        vec![figure("latency p99", "<b>")],
    ] {
        let refused = send(&mut room, "ada", compared("ada", "drill", rows), 1);
        assert!(matches!(refused, Err(Refusal::BadReport(_))), "{refused:?}");
    }
    assert!(
        room.seats["ada"].compared.is_empty(),
        "nothing refused is kept"
    );
}

#[test]
fn each_exercises_latest_is_kept_the_seats_latest_headline_on_the_board_the_figures_by_the_rows_rule(
) {
    let mut room = room_of(&["ada", "bob"]);
    let first = vec![figure("latency p99", "~"), figure("throughput /s", "~")];
    send(&mut room, "ada", compared("ada", "drill", first.clone()), 1).unwrap();
    send(
        &mut room,
        "ada",
        compared("ada", "throughput-plateau", first),
        2,
    )
    .unwrap();
    let second = vec![
        figure("throughput /s", "worse"),
        figure("blocked share", "better"),
        figure("latency p99", "better"),
    ];
    send(
        &mut room,
        "ada",
        compared("ada", "throughput-plateau", second),
        3,
    )
    .unwrap();
    let exercises = EXERCISES.map(String::from);
    let board = room.board(&exercises, looking(Viewer::Facilitator, None));
    let ada = board.seats.iter().find(|r| r.seat == "ada").unwrap();
    let shown = ada.compared.as_ref().unwrap();
    assert_eq!(
        (shown.exercise.as_str(), shown.at_ms),
        ("throughput-plateau", 3),
        "the seat's latest"
    );
    assert_eq!(
        shown.headline,
        "better: blocked share, latency p99; worse: throughput /s"
    );
    let noted: Vec<&str> = room
        .timeline
        .iter()
        .filter(|e| e.what == Happening::Compared)
        .map(|e| e.detail.as_str())
        .collect();
    assert_eq!(
        noted,
        [
            "~ on every figure",
            "~ on every figure",
            shown.headline.as_str()
        ]
    );
    let all = room.comparisons(looking(Viewer::Facilitator, None), Some("ada"));
    let kept: Vec<(&str, u64)> = all
        .iter()
        .map(|c| (c.report.exercise.as_str(), c.at_ms))
        .collect();
    assert_eq!(
        kept,
        [("throughput-plateau", 3), ("drill", 1)],
        "an exercise's later comparison replaces its earlier; the latest first"
    );
    assert_eq!(
        room.comparisons(looking(Viewer::Seat, Some("ada")), Some("ada"))
            .len(),
        2
    );
    assert!(room
        .comparisons(looking(Viewer::Seat, Some("bob")), Some("ada"))
        .is_empty());
    assert!(room
        .comparisons(looking(Viewer::Projector, None), None)
        .is_empty());
    room.revealed = true;
    let seen = room.comparisons(looking(Viewer::Projector, None), None);
    assert_eq!(
        seen.len(),
        1,
        "without a seat named, each seat's latest alone"
    );
    assert_eq!(seen[0].report.rows.len(), 3);
}

#[test]
fn a_seat_keeps_at_most_its_share_of_comparisons_the_oldest_going_first() {
    let mut room = room_of(&["ada"]);
    let rows = || vec![figure("latency p99", "better")];
    for k in 0..=COMPARED_KEPT_PER_SEAT as u64 {
        let exercise = format!("exercise-{k}");
        send(&mut room, "ada", compared("ada", &exercise, rows()), 10 + k).unwrap();
    }
    let kept = &room.seats["ada"].compared;
    assert_eq!(kept.len(), COMPARED_KEPT_PER_SEAT);
    assert!(!kept.contains_key("exercise-0"), "the oldest went");
    assert!(kept.contains_key(&format!("exercise-{COMPARED_KEPT_PER_SEAT}")));
}

#[test]
fn a_state_file_from_before_keeps_its_one_comparison_under_its_exercise() {
    let mut room = room_of(&["ada"]);
    let rows = vec![figure("latency p99", "better")];
    send(&mut room, "ada", compared("ada", "drill", rows), 7).unwrap();
    let mut file = serde_json::to_value(&room).unwrap();
    let one = file["seats"]["ada"]["compared"]["drill"].take();
    file["seats"]["ada"]["compared"] = one;
    let read: Room = serde_json::from_value(file.clone()).unwrap();
    assert_eq!(read.seats["ada"].compared, room.seats["ada"].compared);
    file["seats"]["ada"]["compared"] = serde_json::Value::Null;
    let none: Room = serde_json::from_value(file).unwrap();
    assert!(none.seats["ada"].compared.is_empty());
}
