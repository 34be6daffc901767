#!/bin/sh
# install.sh: installs system-simulator from the workshop's kit into this user's
# own directories. No root; it reaches nothing but the kit it came from.
#
#   curl -fsS http://ROOM:7900/kit/install.sh | sh     from the room (it prints this line)
#   sh /media/stick/kit/install.sh                     from a copy of the kit
#
# It picks this machine's OS and architecture, fetches that archive and the
# kit's SHA256SUMS, refuses an archive whose sum differs, unpacks it into
# ${XDG_DATA_HOME:-~/.local/share}/system-simulator/VERSION, links the two
# binaries into ~/.local/bin, and says the next command. Made by tools/kit;
# the room fills in its own address below when it serves it.
set -eu

kit='@KIT_URL@'
case "$kit" in
  @*) kit=$(cd "$(dirname "$0")" && pwd) ;; # not served by a room: the folder it is in
esac

say() { printf 'install: %s\n' "$*"; }
die() { printf 'install: %s\n' "$*" >&2; exit 1; }

os=$(uname -s)
case "$(uname -m)" in
  x86_64 | amd64) arch=x86_64 ;;
  aarch64 | arm64) arch=aarch64 ;;
  *) die "no binary in this kit for $(uname -m); build from the kit's source archive (docs/workshop/reference.md)" ;;
esac
case "$os" in
  Linux) platform=linux-$arch ;;
  Darwin) platform=macos-$arch ;;
  *) die "no binary in this kit for $os" ;;
esac
lima="run it in the Lima VM (deploy/lima/system-simulator.yaml; docs/workshop/reference.md, \"The kit in full\")"

# fetch NAME FILE: from the room (curl or wget) or from the kit's folder.
fetch() {
  case "$kit" in
    http://*)
      if command -v curl >/dev/null 2>&1; then
        curl -fsS --max-time 300 -o "$2" "$kit/$1" || die "could not fetch $kit/$1"
      elif command -v wget >/dev/null 2>&1; then
        wget -q -T 300 -O "$2" "$kit/$1" || die "could not fetch $kit/$1"
      else
        die "neither curl nor wget is here to fetch $kit/$1"
      fi
      ;;
    *) cp "$kit/$1" "$2" || die "no $1 in $kit" ;;
  esac
}

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d' ' -f1
  else
    die "neither sha256sum nor shasum is here to check the archive"
  fi
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fetch SHA256SUMS "$work/SHA256SUMS"
name=$(sed -n "s/^[0-9a-f]\{64\}  \(system-simulator-.*-$platform\.tar\.gz\)\$/\1/p" "$work/SHA256SUMS" | head -1)
if [ -z "$name" ]; then
  [ "$os" = Darwin ] && die "this kit has no binary for macOS: $lima"
  die "this kit has no archive for $platform ($(sed 's/^[0-9a-f]*  //' "$work/SHA256SUMS" | tr '\n' ' '))"
fi
version=$(echo "$name" | sed "s/^system-simulator-\(.*\)-$platform\.tar\.gz\$/\1/")
case "$version" in
  "" | . | .. | *[!A-Za-z0-9._-]*) die "the kit names an archive with no plain version: $name" ;;
esac
expected=$(grep "  $name\$" "$work/SHA256SUMS" | cut -d' ' -f1)
say "fetching $name from $kit"
fetch "$name" "$work/$name"
got=$(sha256 "$work/$name")
[ "$got" = "$expected" ] || die "$name's SHA-256 is $got, not the kit's $expected: not installed (fetch it again, or ask the facilitator)"
say "its SHA-256 matches the kit's ($expected)"

data=${XDG_DATA_HOME:-$HOME/.local/share}/system-simulator
bin=$HOME/.local/bin
mkdir -p "$data" "$bin"
rm -rf "${data:?}/$version.new"
mkdir "$data/$version.new"
tar -xzf "$work/$name" -C "$data/$version.new" --strip-components=1
rm -rf "${data:?}/${version:?}"
mv "$data/$version.new" "$data/$version"
ln -sfn "$version" "$data/current"
for b in system-simulator sim-clients; do
  ln -sf "$data/current/bin/$b" "$bin/$b"
done
if ! "$bin/system-simulator" --version >/dev/null 2>&1; then
  why=$("$bin/system-simulator" --version 2>&1 | head -1)
  [ "$os" = Darwin ] && die "the installed $bin/system-simulator does not start on this Mac ($why): $lima"
  die "the installed $bin/system-simulator does not start here: $why"
fi

say "installed $("$bin/system-simulator" --version) in $data/$version"
say "  binaries: $bin/system-simulator, $bin/sim-clients"
say "  scripts and pages: $data/current/scripts, $data/current/docs"
case ":$PATH:" in
  *":$bin:"*) ;;
  *) say "  $bin is not on your PATH: export PATH=\"$bin:\$PATH\"" ;;
esac
if [ "$os" = Darwin ]; then
  say "  this Mac's binaries were linked on Linux and had never run on a Mac before;"
  say "  they have no isim probes: system-simulator trace NAME traces over the probe tap."
  say "  For bpftrace and every exercise as its page tells it: $lima"
fi
say "next: paste the room's line (export ISIM_ROOM=... ISIM_SEAT=your-name), then"
say "  system-simulator doctor"
say "reports this laptop's readiness to the room's board."
