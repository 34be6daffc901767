//! Names for the frames a tracer printed as bare addresses (`0x5650d6fb3d0f`):
//! bpftrace 0.17 left every frame of a debug build's stacks unnamed, and a
//! library's frame can come out so in DTrace too. While the server still runs
//! (scripts/trace folds its stacks as soon as the tracer ends), its memory map
//! (`/proc/PID/maps`) says which file each address is in and where, and that
//! file's symbol table (read with `object`) names the function.
//!
//! Written here because the crates that symbolise (backtrace's, addr2line's)
//! name the addresses of the process they run in, not another's.

use std::collections::HashMap;
use std::path::PathBuf;

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

/// One line of `/proc/PID/maps` that maps a file.
#[derive(Debug)]
struct Mapping {
    start: u64,
    end: u64,
    /// Where in the file the mapping begins.
    offset: u64,
    path: PathBuf,
}

/// A file's loadable segments and functions, as its ELF headers say.
#[derive(Debug, Default)]
struct FileSymbols {
    /// (file offset, virtual address, size) of each loadable segment.
    segments: Vec<(u64, u64, u64)>,
    /// (address, size, name) of each function, sorted by address.
    functions: Vec<(u64, u64, String)>,
}

/// Names addresses of one process.
#[derive(Debug)]
pub struct Symbolizer {
    maps: Vec<Mapping>,
    /// Read on first need; `None`: a file that could not be read or parsed.
    files: HashMap<PathBuf, Option<FileSymbols>>,
}

impl Symbolizer {
    /// The symboliser of process `pid`, from its memory map now.
    pub fn of_process(pid: u32) -> std::io::Result<Self> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
        Ok(Self::from_maps(&text, pid))
    }

    /// A file replaced since it was mapped (a server rebuilt while it runs:
    /// `path (deleted)`) is read through `/proc/PID/map_files`, which still
    /// holds the mapped one (root only), not the new file at its path.
    fn from_maps(text: &str, pid: u32) -> Self {
        let maps = text
            .lines()
            .filter_map(|line| {
                let mut fields = line.split_whitespace();
                let (start, end) = fields.next()?.split_once('-')?;
                let offset = fields.nth(1)?;
                let path = fields.nth(2)?;
                path.starts_with('/').then_some(())?;
                let path = match fields.next() {
                    Some("(deleted)") => {
                        PathBuf::from(format!("/proc/{pid}/map_files/{start}-{end}"))
                    }
                    _ => PathBuf::from(path),
                };
                Some(Mapping {
                    start: u64::from_str_radix(start, 16).ok()?,
                    end: u64::from_str_radix(end, 16).ok()?,
                    offset: u64::from_str_radix(offset, 16).ok()?,
                    path,
                })
            })
            .collect();
        Self {
            maps,
            files: HashMap::new(),
        }
    }

    /// The function `address` is in, if a mapped file's symbols say.
    pub fn name(&mut self, address: u64) -> Option<String> {
        let map = self
            .maps
            .iter()
            .find(|m| (m.start..m.end).contains(&address))?;
        let file_offset = address - map.start + map.offset;
        let symbols = self
            .files
            .entry(map.path.clone())
            .or_insert_with(|| read_symbols(&map.path))
            .as_ref()?;
        let (seg_offset, seg_address, _) = symbols
            .segments
            .iter()
            .find(|(off, _, size)| (*off..off + size).contains(&file_offset))?;
        let virtual_address = file_offset - seg_offset + seg_address;
        let at = symbols
            .functions
            .partition_point(|(start, _, _)| *start <= virtual_address)
            .checked_sub(1)?;
        let (start, size, name) = &symbols.functions[at];
        (virtual_address < start + (*size).max(1)).then(|| name.clone())
    }
}

fn read_symbols(path: &std::path::Path) -> Option<FileSymbols> {
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    let segments = file
        .segments()
        .map(|s| {
            let (offset, size) = s.file_range();
            (offset, s.address(), size)
        })
        .collect();
    let mut functions: Vec<(u64, u64, String)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
        .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_owned())))
        .collect();
    functions.sort_by_key(|(address, _, _)| *address);
    functions.dedup_by_key(|(address, _, _)| *address);
    Some(FileSymbols {
        segments,
        functions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_processs_own_function_is_named_from_its_address() {
        let address = this_processs_own_function_is_named_from_its_address as *const () as u64;
        let mut symbols = Symbolizer::of_process(std::process::id()).unwrap();
        let name = symbols.name(address + 1).expect("a name");
        assert!(
            name.contains("this_processs_own_function_is_named_from_its_address"),
            "{name}"
        );
        assert_eq!(symbols.name(8), None);
    }

    #[test]
    fn maps_lines_without_a_file_are_skipped_and_a_replaced_file_is_read_as_mapped() {
        let maps = "55d7-55d8 r--p 00000000 fe:00 1 /bin/x\n\
                    7ffc-7ffd rw-p 00000000 00:00 0 [stack]\n\
                    55e0-55e9 r-xp 00001000 fe:00 2 /bin/y (deleted)\n";
        let symbols = Symbolizer::from_maps(maps, 42);
        assert_eq!(symbols.maps.len(), 2);
        assert_eq!(symbols.maps[0].path, PathBuf::from("/bin/x"));
        assert_eq!(
            symbols.maps[1].path,
            PathBuf::from("/proc/42/map_files/55e0-55e9")
        );
    }
}
