//! The command blocks of a Markdown page, as tests/suite/guards/pages_run.rs runs them.
//!
//! A block is an indented code block (four spaces, after a blank line) or a fenced
//! one tagged `sh`, `bash` or `console`; untagged and other fences are diagrams,
//! output or other languages. The line before a block (blank lines skipped) may
//! mark it:
//!
//! - `<!-- output -->`: what a command prints, not a command;
//! - `<!-- not run: REASON -->`: commands that cannot run in the test (another OS,
//!   Kubernetes, Slurm, a benchmark of minutes, a placeholder); their flags are
//!   still checked against the tool's `--help`;
//! - `<!-- as a user: no root -->`: commands an attendee without root runs; the
//!   test runs them as an unprivileged user.
//!
//! Every other block is run as printed. Lines join into commands as a shell joins
//! them: a trailing `\` continues the line, and an open `for ... do` runs to its
//! `done`.

/// How a block is to be treated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mark {
    Run,
    /// Run as an unprivileged user.
    AsUser,
    Output,
    NotRun(String),
}

/// One block of a page.
#[derive(Debug, Clone)]
pub struct Block {
    /// The page's line number of the block's first line.
    pub line: usize,
    pub mark: Mark,
    /// Its commands, continuation lines joined.
    pub commands: Vec<String>,
    /// The page's line number of each command's first line.
    pub command_lines: Vec<usize>,
}

const NOT_RUN: &str = "<!-- not run:";
const OUTPUT: &str = "<!-- output -->";
const AS_USER: &str = "<!-- as a user: no root -->";

/// The blocks of `text`, or what is wrong with a marker.
pub fn blocks(text: &str) -> Result<Vec<Block>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(tag) = line.trim_start().strip_prefix("```") {
            let end = (i + 1..lines.len())
                .find(|&j| lines[j].trim_start().starts_with("```"))
                .ok_or(format!("line {}: a fence that never closes", i + 1))?;
            if matches!(tag.trim(), "sh" | "bash" | "console") {
                found.push(block(&lines, i + 1, &lines[i + 1..end], "")?);
            }
            i = end + 1;
            continue;
        }
        let after_blank = i == 0 || lines[i - 1].trim().is_empty();
        if after_blank && line.starts_with("    ") && !line.trim().is_empty() {
            let end = (i..lines.len())
                .find(|&j| !lines[j].starts_with("    ") && !lines[j].trim().is_empty())
                .unwrap_or(lines.len());
            found.push(block(&lines, i, &lines[i..end], "    ")?);
            i = end;
            continue;
        }
        i += 1;
    }
    Ok(found)
}

fn block(page: &[&str], first: usize, body: &[&str], indent: &str) -> Result<Block, String> {
    let before = page[..first]
        .iter()
        .rev()
        .skip(usize::from(indent.is_empty()))
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim())
        .unwrap_or("");
    let mark = if before == OUTPUT {
        Mark::Output
    } else if before == AS_USER {
        Mark::AsUser
    } else if let Some(rest) = before.strip_prefix(NOT_RUN) {
        let reason = rest.trim_end_matches("-->").trim();
        if reason.is_empty() {
            return Err(format!("line {first}: `{NOT_RUN}` needs a reason"));
        }
        Mark::NotRun(reason.to_string())
    } else {
        Mark::Run
    };
    let lines: Vec<&str> = body
        .iter()
        .map(|l| l.strip_prefix(indent).unwrap_or(l))
        .collect();
    let (offsets, commands): (Vec<usize>, Vec<String>) = commands(&lines).into_iter().unzip();
    Ok(Block {
        line: first + 1,
        mark,
        commands,
        command_lines: offsets.iter().map(|o| first + 1 + o).collect(),
    })
}

/// Lines joined into the commands a shell would run one by one, each with the
/// offset of its first line.
fn commands(lines: &[&str]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut start = 0;
    let mut open_loops = 0i32;
    for (offset, line) in lines.iter().enumerate() {
        if line.trim().is_empty() && current.is_empty() {
            continue;
        }
        if current.is_empty() {
            start = offset;
        }
        // A loop opens where a command starts with its keyword; comments are prose.
        let code = without_comment(line).trim_start();
        if ["for ", "while ", "until "]
            .iter()
            .any(|k| code.starts_with(k))
        {
            open_loops += 1;
        }
        if code.starts_with("done") {
            open_loops -= 1;
        }
        if !current.is_empty() {
            current.push('\n');
        }
        current.push_str(line);
        if !line.trim_end().ends_with('\\') && open_loops <= 0 {
            out.push((start, std::mem::take(&mut current)));
            open_loops = 0;
        }
    }
    if !current.is_empty() {
        out.push((start, current));
    }
    out
}

/// `command` without its trailing `# comment` (a `#` after a blank, outside
/// quotes, as the shell reads it).
pub fn without_comment(command: &str) -> &str {
    let mut quote = None;
    let mut previous = ' ';
    for (i, c) in command.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '#') if previous.is_whitespace() => return command[..i].trim_end(),
            _ => {}
        }
        previous = c;
    }
    command.trim_end()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indented_and_tagged_blocks_with_their_marks() {
        let page = "Text\n\n    cargo run -- demo\n    curl -s a \\\n      -d b\n\n\
                    <!-- not run: macOS -->\n\n    sudo dtrace -s x.d\n\n\
                    <!-- as a user: no root -->\n\n    system-simulator trace count\n\n\
                    ```sh\nfor k in 0 1; do\n  echo $k &\ndone; wait\n```\n\n\
                    ```\ndiagram\n```\n\n<!-- output -->\n\n    p50 1 ms\n";
        let found = blocks(page).unwrap();
        assert_eq!(found.len(), 5, "{found:?}");
        assert_eq!(found[0].mark, Mark::Run);
        assert_eq!(found[0].line, 3);
        assert_eq!(
            found[0].commands,
            ["cargo run -- demo", "curl -s a \\\n  -d b"]
        );
        assert_eq!(found[0].command_lines, [3, 4]);
        assert_eq!(found[1].mark, Mark::NotRun("macOS".into()));
        assert_eq!(found[2].mark, Mark::AsUser);
        assert_eq!(found[2].commands, ["system-simulator trace count"]);
        assert_eq!(
            found[3].commands,
            ["for k in 0 1; do\n  echo $k &\ndone; wait"]
        );
        assert_eq!(found[3].mark, Mark::Run);
        assert_eq!(found[4].mark, Mark::Output);
    }

    #[test]
    fn comments_end_where_the_shell_ends_them() {
        assert_eq!(without_comment("serve   # terminal 1"), "serve");
        assert_eq!(
            without_comment("grep -A8 '\"#x\" # y'"),
            "grep -A8 '\"#x\" # y'"
        );
        assert_eq!(without_comment("echo a#b"), "echo a#b");
    }

    #[test]
    fn a_loop_word_in_a_comment_opens_no_loop() {
        let found = blocks("\n    serve   # a server for the two below\n    sweep\n").unwrap();
        assert_eq!(
            found[0].commands,
            ["serve   # a server for the two below", "sweep"]
        );
    }

    #[test]
    fn a_not_run_mark_needs_its_reason() {
        assert!(blocks("<!-- not run: -->\n\n    x\n").is_err());
    }
}
