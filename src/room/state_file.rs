//! The room kept in a file (`room --state FILE`): read at start, so a room
//! restarted mid-workshop shows the same board and its seats' tokens still
//! report; written whole (a temporary file renamed over it, so a crash leaves
//! the old room or the new, never half of one) within a second of each change,
//! and at shutdown. The file holds the tokens and the key: readable by its owner only.

use std::path::Path;

use anyhow::Context;

use super::board::Room;

/// The file's format; a file of another is refused rather than misread.
const FORMAT: u32 = 1;

#[derive(serde::Serialize, serde::Deserialize)]
struct SavedRoom {
    format: u32,
    room: Room,
}

/// The room in `path`, or `None` when there is no such file yet. A file that
/// does not parse is an error: the room never starts over one it would lose.
pub fn read(path: &Path) -> anyhow::Result<Option<Room>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let kept: SavedRoom = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a room's state file, or is damaged. The room has not started and left it as it is: \
             to start a new room, keep it aside (mv {0} {0}.damaged) and start again; to keep this \
             room, mend the file where the error below points and start again",
            path.display()
        )
    })?;
    anyhow::ensure!(
        kept.format == FORMAT,
        "{} is a room of format {}, this version reads {FORMAT}",
        path.display(),
        kept.format
    );
    Ok(Some(kept.room))
}

/// Writes `room` to `path` whole.
pub fn write(path: &Path, room: &Room) -> anyhow::Result<()> {
    let kept = SavedRoom {
        format: FORMAT,
        room: room.clone(),
    };
    let text = serde_json::to_vec(&kept)?;
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".new");
    let temporary = std::path::PathBuf::from(temporary);
    simulator_service::os::write_private(&temporary, &text)
        .and_then(|()| std::fs::rename(&temporary, path))
        .with_context(|| format!("writing the room to {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_room_read_back_is_the_room_written_and_a_foreign_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("room.json");
        assert!(read(&path).unwrap().is_none());
        let mut room = Room::new("key".into(), "pw".into(), 5);
        room.join("alice", "pw", || "t".into(), 6).unwrap();
        write(&path, &room).unwrap();
        let back = read(&path).unwrap().unwrap();
        assert_eq!(back.seat_of("t"), Some("alice"));
        assert_eq!((back.key.as_str(), back.started_ms), ("key", 5));
        assert_ne!(
            simulator_service::os::is_private(&path).unwrap(),
            Some(false)
        );
        // A room from before readiness (its seats have no `ready`) reads as one
        // whose laptops have not reported.
        let old = std::fs::read_to_string(&path)
            .unwrap()
            .replace(",\"ready\":null", "");
        assert!(!old.contains("\"ready\""), "{old}");
        std::fs::write(&path, old).unwrap();
        assert_eq!(read(&path).unwrap().unwrap().seat_of("t"), Some("alice"));
        std::fs::write(&path, "{\"seats\": 3}").unwrap();
        let refused = read(&path).unwrap_err().to_string();
        assert!(refused.contains("not a room's state file"), "{refused}");
        assert!(
            refused.contains(".damaged"),
            "it says how to recover: {refused}"
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"seats\": 3}",
            "the damaged file is kept as it was"
        );
    }
}
