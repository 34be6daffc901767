use simulator_api::live::{CheckCondition, CheckProgress};
use simulator_api::room::{CellState, Happening, SeatReport, Viewer};

use super::*;
use crate::room::view::Looking;

const MIN: u64 = 60_000;

fn exercises() -> Vec<String> {
    ["semaphore-starvation", "sequential-persist"]
        .map(String::from)
        .to_vec()
}

fn room() -> Room {
    Room::new("key".into(), "plum-42".into(), 0)
}

fn joined(room: &mut Room, seat: &str, at: u64) -> String {
    let token = format!("token-of-{seat}");
    room.join(seat, "plum-42", || token.clone(), at).unwrap()
}

fn condition(label: &str, bound: &str, limit: f64, value: Option<f64>) -> CheckCondition {
    let holds = value.map(|v| {
        if bound.starts_with('<') {
            v < limit
        } else {
            v > limit
        }
    });
    CheckCondition {
        label: label.into(),
        bound: bound.into(),
        limit: Some(limit),
        value,
        holds,
    }
}

/// A sequential-persist check: p99 and persists a second, so far or judged.
fn progress(p99: Option<f64>, persists: Option<f64>, verdict: Option<&str>) -> CheckProgress {
    let conditions = vec![
        condition("request latency p99 (ms)", "< 50", 50.0, p99),
        condition("persists a second", "> 100", 100.0, persists),
    ];
    let passed = verdict.map(|_| conditions.iter().all(|c| c.holds == Some(true)));
    CheckProgress {
        scenario: "sequential-persist".into(),
        window_s: 10.0,
        elapsed_s: if verdict.is_some() { 10.0 } else { 3.0 },
        conditions,
        verdict: verdict.map(str::to_owned),
        passed,
    }
}

fn report(room: &mut Room, seat: &str, attempt: u64, p: CheckProgress, at: u64) {
    let token = format!("token-of-{seat}");
    let r = SeatReport {
        seat: seat.into(),
        attempt,
        progress: p,
    };
    room.report(&token, r, &exercises(), at).unwrap();
}

/// Two seats a minute in: alice's check failed, bob's solved.
fn alice_failed_and_bob_solved() -> Room {
    let mut room = room();
    joined(&mut room, "alice", 0);
    joined(&mut room, "bob", 0);
    let failed = progress(Some(900.0), Some(16.0), Some("not yet"));
    report(&mut room, "alice", 1, failed, MIN);
    let solved = progress(Some(9.0), Some(190.0), Some("solved"));
    report(&mut room, "bob", 2, solved, MIN);
    room
}

fn facilitator(now_ms: u64) -> Looking<'static> {
    Looking {
        viewer: Viewer::Facilitator,
        seat: None,
        now_ms,
        stuck_after_ms: 10 * MIN,
    }
}

fn cell(room: &Room, seat: &str, now: u64) -> simulator_api::room::Cell {
    let board = room.board(&exercises(), facilitator(now));
    let row = board.seats.iter().find(|r| r.seat == seat).unwrap();
    row.cells[0].clone()
}

#[test]
fn a_seat_joins_once_with_the_password_and_a_freed_seat_joins_again() {
    let mut room = room();
    let token = || "t".to_owned();
    assert!(matches!(
        room.join("bob smith", "plum-42", token, 0),
        Err(Refusal::BadSeatName(_))
    ));
    assert_eq!(
        room.join("bob", "plum-41", token, 0),
        Err(Refusal::BadPassword)
    );
    assert_eq!(room.join("bob", "plum-42", token, 0), Ok("t".into()));
    assert_eq!(
        room.join("bob", "plum-42", token, 1),
        Err(Refusal::Taken("bob".into()))
    );
    room.free("bob", 2).unwrap();
    assert_eq!(room.seat_of("t"), None, "a freed token no longer reports");
    assert_eq!(
        room.join("bob", "plum-42", || "u".into(), 3),
        Ok("u".into())
    );
    assert_eq!(room.seat_of("u"), Some("bob"));
    assert_eq!(room.seat_count(), 1);
}

#[test]
fn one_address_holds_at_most_its_seats_and_the_rooms_own_machine_any() {
    let mut room = room();
    let address: std::net::IpAddr = "10.0.0.5".parse().unwrap();
    let laptop = Some(address);
    let mut n = 0;
    let mut join = |room: &mut Room, from| {
        n += 1;
        room.join_from(&format!("s{n}"), "plum-42", from, || format!("t{n}"), n)
    };
    for _ in 0..SEATS_PER_ADDRESS {
        join(&mut room, laptop).unwrap();
    }
    assert_eq!(join(&mut room, laptop), Err(Refusal::TooManyFrom(address)));
    assert!(join(&mut room, Some("10.0.0.6".parse().unwrap())).is_ok());
    for _ in 0..=SEATS_PER_ADDRESS {
        join(&mut room, None).unwrap();
    }
    room.free("s1", 99).unwrap();
    assert!(join(&mut room, laptop).is_ok(), "a freed seat is not held");
}

#[test]
fn a_report_needs_its_own_seats_token() {
    let mut room = room();
    joined(&mut room, "alice", 0);
    joined(&mut room, "bob", 0);
    let as_bob = |room: &mut Room, token: &str| {
        let r = SeatReport {
            seat: "bob".into(),
            attempt: 1,
            progress: progress(None, None, None),
        };
        room.report(token, r, &exercises(), 1)
    };
    assert_eq!(
        as_bob(&mut room, "token-of-alice"),
        Err(Refusal::OtherSeat {
            seat: "bob".into(),
            token_of: "alice".into()
        })
    );
    assert_eq!(
        as_bob(&mut room, "guess"),
        Err(Refusal::BadToken("bob".into()))
    );
    assert_eq!(as_bob(&mut room, "token-of-bob"), Ok(()));
    let mut other = progress(None, None, None);
    other.scenario = "no-such-exercise".into();
    let r = SeatReport {
        seat: "bob".into(),
        attempt: 2,
        progress: other,
    };
    assert!(matches!(
        room.report("token-of-bob", r, &exercises(), 2),
        Err(Refusal::UnknownExercise(_))
    ));
    let r = SeatReport {
        seat: "carol".into(),
        attempt: 1,
        progress: progress(None, None, None),
    };
    assert_eq!(
        room.report("token-of-bob", r, &exercises(), 2),
        Err(Refusal::NoSuchSeat("carol".into()))
    );
}

#[test]
fn a_cell_runs_fails_by_its_worst_condition_and_then_stays_solved() {
    let mut room = room();
    joined(&mut room, "alice", 0);
    report(
        &mut room,
        "alice",
        7,
        progress(Some(900.0), Some(20.0), None),
        MIN,
    );
    let c = cell(&room, "alice", MIN);
    assert_eq!((c.state, c.attempts), (CellState::Running, 1));
    assert_eq!(c.last.conditions[0].value, Some(900.0));

    // p99 1,100 against < 50 is 22x; persists 16.7 against > 100 is 6x short.
    let failed = progress(Some(1100.0), Some(16.7), Some("not yet"));
    report(&mut room, "alice", 7, failed.clone(), 2 * MIN);
    report(&mut room, "alice", 7, failed, 2 * MIN + 1); // sent again: ignored
    let c = cell(&room, "alice", 2 * MIN);
    assert_eq!((c.state, c.attempts), (CellState::Failed, 1));
    let worst = c.failed.unwrap();
    assert_eq!(worst.label, "request latency p99 (ms)");
    assert!((worst.factor.unwrap() - 22.0).abs() < 1e-9);

    report(
        &mut room,
        "alice",
        8,
        progress(Some(8.0), Some(190.0), None),
        5 * MIN,
    );
    let c = cell(&room, "alice", 5 * MIN);
    assert_eq!(
        (c.state, c.attempts, c.failed),
        (CellState::Running, 2, None)
    );
    report(
        &mut room,
        "alice",
        8,
        progress(Some(9.0), Some(190.0), Some("solved")),
        6 * MIN,
    );
    let c = cell(&room, "alice", 6 * MIN);
    assert_eq!(
        (c.state, c.attempts, c.solved_ms),
        (CellState::Solved, 2, Some(6 * MIN))
    );

    // Checked again after, and failed: still solved, in 2 attempts.
    report(
        &mut room,
        "alice",
        9,
        progress(Some(80.0), Some(190.0), Some("not yet")),
        7 * MIN,
    );
    let c = cell(&room, "alice", 7 * MIN);
    assert_eq!(
        (c.state, c.attempts, c.solved_ms),
        (CellState::Solved, 2, Some(6 * MIN))
    );

    let whats: Vec<_> = room.timeline.iter().map(|e| e.what).collect();
    use Happening::*;
    assert_eq!(
        whats,
        [Joined, Started, Failed, Started, Solved, Started, Failed]
    );
}

#[test]
fn a_check_that_could_not_judge_is_refused_not_failed() {
    let mut room = room();
    joined(&mut room, "alice", 0);
    let mut p = progress(None, None, Some("not checked: stop any other load"));
    p.conditions.clear();
    p.passed = Some(false);
    report(&mut room, "alice", 1, p, MIN);
    let c = cell(&room, "alice", MIN);
    assert_eq!(c.state, CellState::Refused);
    let summary = &room.board(&exercises(), facilitator(MIN)).per_exercise[0];
    assert!(
        summary.fails_most.is_empty(),
        "a refusal is no failed condition"
    );
}

#[test]
fn the_seats_see_their_own_rows_and_the_projector_the_totals_until_revealed() {
    let mut room = alice_failed_and_bob_solved();
    let look = |viewer, seat| Looking {
        viewer,
        seat,
        now_ms: MIN,
        stuck_after_ms: 10 * MIN,
    };
    let rows = |room: &Room, viewer, seat| -> Vec<String> {
        let board = room.board(&exercises(), look(viewer, seat));
        board.seats.into_iter().map(|r| r.seat).collect()
    };
    assert_eq!(rows(&room, Viewer::Facilitator, None), ["alice", "bob"]);
    assert_eq!(rows(&room, Viewer::Seat, Some("bob")), ["bob"]);
    assert!(rows(&room, Viewer::Projector, None).is_empty());
    let projector = room.board(&exercises(), look(Viewer::Projector, None));
    assert_eq!(projector.seat_count, 2);
    assert!(projector.timeline.iter().all(|e| e.seat.is_none()));
    let summary = &projector.per_exercise[0];
    assert_eq!((summary.attempted, summary.solved), (2, 1));
    let bob = room.board(&exercises(), look(Viewer::Seat, Some("bob")));
    assert!(bob
        .timeline
        .iter()
        .all(|e| e.seat.as_deref() == Some("bob")));

    room.revealed = true;
    assert_eq!(rows(&room, Viewer::Seat, Some("bob")), ["alice", "bob"]);
    assert_eq!(rows(&room, Viewer::Projector, None), ["alice", "bob"]);
}

#[test]
fn a_seat_on_one_exercise_past_the_limit_without_solving_it_is_stuck() {
    let room = alice_failed_and_bob_solved();
    let stuck = |now| {
        let board = room.board(&exercises(), facilitator(now));
        board
            .seats
            .iter()
            .filter(|r| r.stuck.is_some())
            .map(|r| r.seat.clone())
            .collect::<Vec<_>>()
    };
    assert!(stuck(10 * MIN).is_empty());
    assert_eq!(stuck(11 * MIN), ["alice"], "solved seats are never stuck");
}

#[test]
fn each_exercise_names_the_condition_that_fails_most() {
    let mut room = room();
    for seat in ["a", "b", "c"] {
        joined(&mut room, seat, 0);
    }
    // Two checks fail on p99 alone, one on both.
    report(
        &mut room,
        "a",
        1,
        progress(Some(90.0), Some(190.0), Some("not yet")),
        1,
    );
    report(
        &mut room,
        "b",
        2,
        progress(Some(90.0), Some(190.0), Some("not yet")),
        2,
    );
    report(
        &mut room,
        "c",
        3,
        progress(Some(90.0), Some(16.0), Some("not yet")),
        3,
    );
    let board = room.board(&exercises(), facilitator(4));
    let most = &board.per_exercise[0].fails_most;
    assert_eq!(most.len(), 1);
    assert_eq!(
        (most[0].label.as_str(), most[0].failed, most[0].of),
        ("request latency p99 (ms)", 3, 3)
    );
    // One more check failing on persists alone: a tie, both named, in the check's order.
    report(
        &mut room,
        "a",
        4,
        progress(Some(9.0), Some(16.0), Some("not yet")),
        5,
    );
    report(
        &mut room,
        "b",
        5,
        progress(Some(9.0), Some(16.0), Some("not yet")),
        6,
    );
    let board = room.board(&exercises(), facilitator(7));
    let labels: Vec<_> = board.per_exercise[0]
        .fails_most
        .iter()
        .map(|c| (c.label.as_str(), c.failed, c.of))
        .collect();
    assert_eq!(
        labels,
        [
            ("request latency p99 (ms)", 3, 5),
            ("persists a second", 3, 5)
        ]
    );
}

#[test]
fn the_csv_has_a_line_per_seat_and_exercise_checked() {
    let mut room = room();
    joined(&mut room, "alice", 0);
    joined(&mut room, "bob", 0);
    report(
        &mut room,
        "alice",
        1,
        progress(Some(9.0), Some(190.0), Some("solved")),
        3 * MIN,
    );
    use super::compared_tests::figure;
    let compared = simulator_api::room::CompareReport {
        seat: "alice".into(),
        exercise: "sequential-persist".into(),
        before: "first failing check".into(),
        after: "this check".into(),
        rows: vec![
            figure("latency p99", "better"),
            figure("blocked share", "better"),
        ],
    };
    room.compare("token-of-alice", compared, 3 * MIN).unwrap();
    let csv = room.csv(&exercises(), 3 * MIN, 10 * MIN);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(lines[0].starts_with("seat,exercise,state,attempts,"));
    assert!(lines[0].ends_with(",stuck,compared"), "{}", lines[0]);
    assert!(
        lines[1].ends_with(",false,\"better: latency p99, blocked share\""),
        "{}",
        lines[1]
    );
    assert!(
        lines[1].starts_with(
            "alice,sequential-persist,solved,1,1970-01-01T00:03:00Z,1970-01-01T00:03:00Z,0.0,"
        ),
        "{}",
        lines[1]
    );
}

#[test]
fn the_timeline_keeps_its_newest_entries() {
    let mut room = room();
    for i in 0..(TIMELINE_KEPT as u64 + 10) {
        let seat = format!("s{}", i % 400);
        if room.seat_of(&format!("token-of-{seat}")).is_none() {
            joined(&mut room, &seat, i);
        } else {
            report(&mut room, &seat, i, progress(None, None, None), i);
        }
    }
    assert_eq!(room.timeline.len(), TIMELINE_KEPT);
    let board = room.board(&exercises(), facilitator(0));
    assert_eq!(board.timeline.len(), simulator_api::room::TIMELINE_SHOWN);
    assert!(
        board.timeline[0].at_ms > board.timeline[1].at_ms,
        "newest first"
    );
}

fn readiness(ready: bool, problems: &[&str]) -> simulator_api::room::Readiness {
    simulator_api::room::Readiness {
        ready,
        version: "system-simulator 0.1.0".into(),
        os: "linux".into(),
        arch: "aarch64".into(),
        kernel: "6.1.0-57-arm64".into(),
        cgroup: Some(2),
        cores: 2,
        file_limit: Some(1_048_576),
        root: false,
        tracers: vec!["tap".into()],
        exercises: Vec::new(),
        count: None,
        problems: problems.iter().map(|p| (*p).to_owned()).collect(),
    }
}

fn ready_report(seat: &str, r: simulator_api::room::Readiness) -> simulator_api::room::ReadyReport {
    simulator_api::room::ReadyReport {
        seat: seat.into(),
        readiness: r,
    }
}

#[test]
fn a_laptops_readiness_is_its_own_bounded_and_the_latest_counts() {
    let mut room = room();
    joined(&mut room, "ada", 0);
    joined(&mut room, "bob", 0);
    let looking = |now_ms| Looking {
        viewer: Viewer::Projector,
        seat: None,
        now_ms,
        stuck_after_ms: 10 * MIN,
    };
    // Another seat's token, no seat, a report past its bounds: refused, nothing kept.
    assert!(matches!(
        room.ready("token-of-bob", ready_report("ada", readiness(true, &[])), 1),
        Err(Refusal::OtherSeat { .. })
    ));
    assert!(matches!(
        room.ready("token-of-ada", ready_report("eve", readiness(true, &[])), 1),
        Err(Refusal::NoSuchSeat(_))
    ));
    let mut long = readiness(true, &[]);
    long.kernel = "k".repeat(301);
    assert!(matches!(
        room.ready("token-of-ada", ready_report("ada", long), 1),
        Err(Refusal::BadReport(_))
    ));
    let mut many = readiness(true, &[]);
    many.tracers = vec!["tap".into(); 33];
    assert!(matches!(
        room.ready("token-of-ada", ready_report("ada", many), 1),
        Err(Refusal::BadReport(_))
    ));
    let board = room.board(&exercises(), looking(2));
    assert_eq!((board.ready, board.not_ready), (0, 0));

    // Not ready, then fixed: the later report stands; the projector counts them.
    let why = "the short count took over 40 s";
    room.ready(
        "token-of-ada",
        ready_report("ada", readiness(false, &[why])),
        3,
    )
    .unwrap();
    room.ready(
        "token-of-bob",
        ready_report("bob", readiness(false, &[why])),
        3,
    )
    .unwrap();
    room.ready("token-of-ada", ready_report("ada", readiness(true, &[])), 4)
        .unwrap();
    let board = room.board(&exercises(), looking(5));
    assert_eq!((board.ready, board.not_ready), (1, 1));
    assert!(
        board.seats.is_empty(),
        "the projector sees no row before the reveal"
    );
    let newest = &board.timeline[0];
    assert_eq!(
        (newest.what, newest.seat.as_deref()),
        (Happening::Ready, None)
    );
    assert_eq!(board.timeline[1].what, Happening::NotReady);
    assert_eq!(board.timeline[1].detail, why);

    let facilitator = room.board(
        &exercises(),
        Looking {
            viewer: Viewer::Facilitator,
            ..looking(5)
        },
    );
    let ada = facilitator.seats.iter().find(|r| r.seat == "ada").unwrap();
    let kept = ada.ready.as_ref().unwrap();
    assert_eq!((kept.at_ms, kept.readiness.ready), (4, true));
}

#[test]
fn every_report_the_room_takes_is_read_back_from_its_state_file() {
    let mut room = room();
    joined(&mut room, "ada", 0);
    joined(&mut room, "bob", 0);
    // A condition judged false with no figure: once stored as NaN, written as
    // null, and the room refused its own file at the next start.
    let mut no_value = progress(Some(10.0), None, Some("not yet"));
    no_value.conditions[1].holds = Some(false);
    no_value.passed = Some(false);
    report(&mut room, "ada", 1, no_value, MIN);
    // The largest and smallest figures JSON carries.
    let extreme = progress(Some(f64::MAX), Some(f64::MIN_POSITIVE), Some("not yet"));
    report(&mut room, "bob", 1, extreme, 2 * MIN);
    let looking = facilitator_at(3 * MIN);
    let board = room.board(&exercises(), looking);
    let ada = board.seats.iter().find(|r| r.seat == "ada").unwrap();
    let failed = ada.cells[0].failed.as_ref().unwrap();
    assert_eq!(
        (failed.label.as_str(), failed.value),
        ("persists a second", None)
    );
    assert!(board.timeline.iter().any(|e| e.detail.contains("no value")));

    assert_eq!(read_back(&room).board(&exercises(), looking), board);
}

#[test]
fn five_hundred_seats_and_ten_thousand_labels_are_held_or_refused_and_read_back() {
    let mut room = room();
    for i in 0..MAX_SEATS {
        joined(&mut room, &format!("seat-{i}"), 0);
    }
    assert_eq!(
        room.join("one-more", "plum-42", || "t".into(), 0),
        Err(Refusal::Full)
    );
    // Every seat checks once; one also fails by labels of its own making,
    // 32 a verdict, until the room says no more.
    for i in 0..MAX_SEATS {
        report(
            &mut room,
            &format!("seat-{i}"),
            1,
            progress(Some(900.0), None, None),
            MIN,
        );
    }
    let mut accepted = 0;
    let mut refused = Vec::new();
    for batch in 0..(10_000 / 32 + 1) {
        let mut p = progress(Some(900.0), Some(1.0), Some("not yet"));
        p.conditions = (0..32)
            .map(|j| condition(&format!("label {}", batch * 32 + j), "< 1", 1.0, None))
            .map(|mut c| {
                c.holds = Some(false); // failed with no figure: null, never NaN
                c
            })
            .collect();
        p.passed = Some(false);
        let r = SeatReport {
            seat: "seat-0".into(),
            attempt: 2 + batch as u64,
            progress: p,
        };
        match room.report("token-of-seat-0", r, &exercises(), 2 * MIN) {
            Ok(()) => accepted += 32,
            Err(e) => refused.push(e.to_string()),
        }
    }
    assert_eq!(accepted, FAILING_LABELS_KEPT, "{:?}", refused.first());
    assert!(
        refused[0].contains("at most 64 distinct conditions"),
        "{}",
        refused[0]
    );
    let looking = facilitator_at(3 * MIN);
    let board = room.board(&exercises(), looking);
    assert_eq!(board.seats.len(), MAX_SEATS);
    assert_eq!(read_back(&room).board(&exercises(), looking), board);
}

/// The facilitator's view at `now_ms`, with the room's usual limit for stuck.
fn facilitator_at(now_ms: u64) -> Looking<'static> {
    Looking {
        viewer: Viewer::Facilitator,
        seat: None,
        now_ms,
        stuck_after_ms: 10 * MIN,
    }
}

/// `room` written to a state file and read back.
fn read_back(room: &Room) -> Room {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("room.json");
    crate::room::state_file::write(&path, room).unwrap();
    crate::room::state_file::read(&path).unwrap().unwrap()
}

fn drill_report(
    seat: &str,
    diagnosis: Option<&str>,
    steps: usize,
) -> simulator_api::room::DrillReport {
    use simulator_api::trail::{DrillFindings, TrailEntry, TrailKind};
    let step = |i: usize| TrailEntry {
        t: i as f64,
        at_ms: 0,
        kind: TrailKind::Look,
        tool: "stats".into(),
        what: "/stats".into(),
        by: "curl".into(),
        times: 1,
        last_t: i as f64,
        passed: None,
    };
    simulator_api::room::DrillReport {
        seat: seat.into(),
        seed: "plum-42".into(),
        findings: DrillFindings {
            first_look_s: Some(1.0),
            diagnosed_s: diagnosis.map(|_| 90.0),
            diagnosis: diagnosis.map(str::to_owned),
            score: diagnosis.map(|_| "right".to_owned()),
            fixed_s: None,
            changed_nothing: Vec::new(),
            anti_methods: Vec::new(),
        },
        trail: (0..steps).map(step).collect(),
    }
}

#[test]
fn a_drill_report_is_the_seats_own_bounded_noted_when_it_moves_and_its_trail_seen_as_its_row() {
    use simulator_api::room::{Happening, ROOM_TRAIL_MAX};
    let mut room = room();
    joined(&mut room, "ada", 0);
    joined(&mut room, "bob", 0);
    assert!(matches!(
        room.drill("token-of-bob", drill_report("ada", None, 3), 1),
        Err(Refusal::OtherSeat { .. })
    ));
    let long = drill_report("ada", None, ROOM_TRAIL_MAX + 1);
    assert!(matches!(
        room.drill("token-of-ada", long, 1),
        Err(Refusal::BadReport(_))
    ));
    let drills = |room: &Room| {
        room.timeline
            .iter()
            .filter(|e| e.what == Happening::Drill)
            .count()
    };
    room.drill("token-of-ada", drill_report("ada", None, 3), 2)
        .unwrap();
    room.drill("token-of-ada", drill_report("ada", None, 4), 3)
        .unwrap();
    assert_eq!(drills(&room), 1, "the same findings again are not news");
    room.drill("token-of-ada", drill_report("ada", Some("cpu-quota"), 5), 4)
        .unwrap();
    assert_eq!(drills(&room), 2);
    let looking = |viewer, seat| Looking {
        viewer,
        seat,
        now_ms: 5,
        stuck_after_ms: 10 * MIN,
    };
    let row = &room
        .board(&exercises(), looking(Viewer::Facilitator, None))
        .seats[0];
    assert_eq!(row.drill.as_ref().unwrap().steps, 5);
    assert_eq!(room.trails(looking(Viewer::Facilitator, None)).len(), 1);
    assert_eq!(
        room.trails(looking(Viewer::Seat, Some("bob"))).len(),
        0,
        "ada's is hers"
    );
    assert_eq!(room.trails(looking(Viewer::Projector, None)).len(), 0);
    room.revealed = true;
    assert_eq!(
        room.trails(looking(Viewer::Seat, Some("bob")))[0]
            .trail
            .len(),
        5
    );
}
