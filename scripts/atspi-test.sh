#!/usr/bin/env bash
# The desktop app as a screen reader meets it (issue 40, item 5): starts the real, already built
# app under Xvfb with its own D-Bus session and AT-SPI bus, accessibility turned on before it
# starts, and runs scripts/atspi_check.py against it, once in English and once in Turkish.
#
#   scripts/atspi-test.sh [path/to/tplab]      (default: ${CARGO_TARGET_DIR:-target}/debug/tplab)
#   ATSPI_COMMAND='…' scripts/atspi-test.sh …   runs that command in the same environment
#                                                (TPLAB_BIN and ATSPI_PYTHON set) instead
#
# Needs (Debian): xvfb at-spi2-core dbus dbus-x11 python3-pyatspi gir1.2-atspi-2.0 python3-gi.
# The check runs on Debian's /usr/bin/python3, whose python3-gi and python3-pyatspi the packages
# install (pyenv's or a venv's python3 cannot import them).
#
# Every process it starts runs in a process group of its own and is killed by that group's id on
# exit; every wait is bounded (60 s at most) and the whole run stops itself after 300 s.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${1:-"${CARGO_TARGET_DIR:-target}/debug/tplab"}
PY=${ATSPI_PYTHON:-/usr/bin/python3}
if [ ! -x "$BIN" ]; then
  echo "atspi-test: no app binary at $BIN (build it first: cargo build -p tplab)" >&2
  exit 1
fi
BIN=$(realpath "$BIN")
for tool in Xvfb dbus-daemon dbus-send "$PY"; do
  command -v "$tool" >/dev/null || { echo "atspi-test: $tool is missing (see the packages above)" >&2; exit 1; }
done
LAUNCHER=""
for p in /usr/libexec/at-spi-bus-launcher /usr/lib/at-spi2-core/at-spi-bus-launcher; do
  [ -x "$p" ] && LAUNCHER=$p && break
done
[ -n "$LAUNCHER" ] || { echo "atspi-test: at-spi-bus-launcher is missing (apt-get install at-spi2-core)" >&2; exit 1; }
"$PY" -c 'import gi; gi.require_version("Atspi", "2.0"); from gi.repository import Atspi' 2>/dev/null \
  || { echo "atspi-test: $PY cannot import gi's Atspi (apt-get install python3-gi gir1.2-atspi-2.0)" >&2; exit 1; }

start=$(date +%s)
work=$(mktemp -d /tmp/tplab-atspi.XXXXXX)
groups=()   # process-group ids (each started with setsid, so group id = pid)

stop_group() {
  local g=$1
  kill -TERM -- "-$g" 2>/dev/null || return 0
  for _ in $(seq 1 30); do
    kill -0 -- "-$g" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL -- "-$g" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [ -n "${watchdog:-}" ] && kill -- "-$watchdog" 2>/dev/null || true
  local i
  for ((i = ${#groups[@]} - 1; i >= 0; i--)); do
    stop_group "${groups[$i]}"
  done
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "atspi-test: interrupted" >&2; exit 130' INT TERM

# The whole run is bounded: after 300 s the watchdog stops this script (and so, via the trap,
# everything it started).
setsid bash -c "sleep ${ATSPI_LIMIT_S:-300}; echo \"atspi-test: over ${ATSPI_LIMIT_S:-300} s, giving up\" >&2; kill -TERM \"\$0\"" "$$" </dev/null &
watchdog=$!

# spawn LOGNAME CMD...: runs CMD in a new session (its own process group), output to LOGNAME.
spawn() {
  local log=$1
  shift
  setsid "$@" >"$work/$log" 2>&1 </dev/null &
  local pid=$!
  groups+=("$pid")
  last_pid=$pid
}

# wait_for SECONDS WHAT CMD...: polls CMD every 0.2 s until it succeeds, for at most SECONDS.
wait_for() {
  local secs=$1 what=$2
  shift 2
  local deadline=$(($(date +%s) + secs))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "atspi-test: $what did not come up within ${secs} s" >&2
      return 1
    fi
    sleep 0.2
  done
}

show_logs() {
  for f in "$work"/*.log; do
    [ -s "$f" ] || continue
    echo "--- $(basename "$f") (last 40 lines)" >&2
    tail -40 "$f" >&2
  done
}

# 1. A virtual X display: the first free one from :90.
display=""
for n in $(seq 90 120); do
  if [ ! -e "/tmp/.X11-unix/X$n" ] && [ ! -e "/tmp/.X$n-lock" ]; then
    display=$n
    break
  fi
done
[ -n "$display" ] || { echo "atspi-test: no free X display between :90 and :120" >&2; exit 1; }
spawn xvfb.log Xvfb ":$display" -screen 0 1600x1000x24 -nolisten tcp -noreset
export DISPLAY=":$display"
wait_for 60 "Xvfb on $DISPLAY" test -S "/tmp/.X11-unix/X$display" || { show_logs; exit 1; }

# 2. A private D-Bus session bus (nothing of the machine's own session is touched).
spawn dbus.log dbus-daemon --session --nofork --nopidfile --print-address=1
wait_for 60 "the D-Bus session bus" grep -q "^unix:" "$work/dbus.log" || { show_logs; exit 1; }
DBUS_SESSION_BUS_ADDRESS=$(grep -m1 "^unix:" "$work/dbus.log")
export DBUS_SESSION_BUS_ADDRESS
unset AT_SPI_BUS_ADDRESS NO_AT_BRIDGE
export XDG_RUNTIME_DIR="$work/runtime"
mkdir -m 700 -p "$XDG_RUNTIME_DIR"

# 3. The AT-SPI bus: the launcher owns org.a11y.Bus on the session bus and starts the
#    accessibility bus, on which the registry (org.a11y.atspi.Registry) is activated.
spawn atspi.log "$LAUNCHER" --launch-immediately
a11y_prop() {
  dbus-send --session --print-reply=literal --dest=org.a11y.Bus /org/a11y/bus \
    org.freedesktop.DBus.Properties.Get string:org.a11y.Status "string:$1"
}
# Asked only once the launcher owns the name: asking earlier would make the session bus
# activate a second launcher from its service file.
has_owner() {
  dbus-send --session --print-reply=literal --dest=org.freedesktop.DBus /org/freedesktop/DBus \
    org.freedesktop.DBus.NameHasOwner "string:$1" | grep -q true
}
wait_for 60 "the AT-SPI bus launcher (org.a11y.Bus)" has_owner org.a11y.Bus || { show_logs; exit 1; }
a11y_address=$(dbus-send --session --print-reply=literal --dest=org.a11y.Bus /org/a11y/bus \
  org.a11y.Bus.GetAddress | tr -d ' ')
[ -n "$a11y_address" ] || { echo "atspi-test: the launcher gave no AT-SPI bus address" >&2; show_logs; exit 1; }

# 4. Accessibility on, before the app starts: AccessKit's Linux adapter watches org.a11y.Status
#    IsEnabled on the session bus and only then registers the app on the AT-SPI bus.
for prop in IsEnabled ScreenReaderEnabled; do
  dbus-send --session --print-reply --dest=org.a11y.Bus /org/a11y/bus \
    org.freedesktop.DBus.Properties.Set string:org.a11y.Status "string:$prop" variant:boolean:true >/dev/null
done
enabled=$(a11y_prop IsEnabled | tr -s ' \n' ' ')
echo "atspi-test: DISPLAY=$DISPLAY; session bus $DBUS_SESSION_BUS_ADDRESS; AT-SPI bus $a11y_address; org.a11y.Status IsEnabled: $enabled"
case "$enabled" in *true*) ;; *) echo "atspi-test: could not turn org.a11y.Status IsEnabled on" >&2; exit 1 ;; esac

# 5. With ATSPI_COMMAND set, that command instead of the design view's check, in this
#    environment (the live class's browser test drives the desktop console with it).
if [ -n "${ATSPI_COMMAND:-}" ]; then
  echo "atspi-test: running $ATSPI_COMMAND"
  status=0
  TPLAB_BIN="$BIN" ATSPI_PYTHON="$PY" bash -c "$ATSPI_COMMAND" || status=$?
  echo "atspi-test: $([ "$status" -eq 0 ] && echo passed || echo FAILED) in $(($(date +%s) - start)) s"
  exit "$status"
fi

# 6. The app in each language, read by the check.
status=0
for lang in ${ATSPI_LANGS:-en tr}; do
  data="$work/data-$lang"
  mkdir -p "$data"
  lang_start=$(date +%s)
  spawn "app-$lang.log" \
    env TPLAB_DATA_DIR="$data" RUST_LOG="${RUST_LOG:-warn}" "$BIN" --view design --challenge 5 --lang "$lang"
  app=$last_pid
  echo "atspi-test: [$lang] started $BIN (pid $app)"
  if ! timeout -s ABRT 120 "$PY" -u -X faulthandler scripts/atspi_check.py --pid "$app" --lang "$lang"; then
    echo "atspi-test: [$lang] FAILED" >&2
    kill -0 "$app" 2>/dev/null || echo "atspi-test: [$lang] the app is not running any more" >&2
    show_logs
    status=1
  fi
  stop_group "$app"
  echo "atspi-test: [$lang] done in $(($(date +%s) - lang_start)) s"
done

echo "atspi-test: $([ "$status" -eq 0 ] && echo passed || echo FAILED) in $(($(date +%s) - start)) s"
exit "$status"
