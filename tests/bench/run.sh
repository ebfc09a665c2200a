#!/usr/bin/env bash
# tests/bench/run.sh - `make bench`: measure, never assert on time.
#
# 1. event cost   bench_events on tmpfs and on disk, beside the floor; at the
#                 smallest size also with --old-glue (the glue before one
#                 write per attempt), for before/after in one run
# 2. scale        the same with BENCH_RECORDS job records already in state_dir;
#                 `restore-budget list` and `gc --dry-run` over BENCH_CLI_RECORDS
# 3. end to end   tests/bench/e2e.sh on a private cluster (BENCH_E2E_RUNS=0 skips):
#                 start latency, srun steps, the controller calls and sdiag RPCs
#                 per attempt; BENCH_STORE (dir or controller) for e2e and throughput
# 4. memory       RSS over BENCH_RSS_EVENTS events; valgrind --leak-check=full
# 5. storm        bench_storm: N = BENCH_STORM_NODES workers run one job's
#                 prolog at once (tmpfs and disk, as BENCH_FS)
# 6. throughput   tests/bench/throughput.sh: THROUGHPUT_JOBS short jobs per
#                 variant on a private cluster, with the plugin vs without,
#                 then a THROUGHPUT_ARRAY-task job array per variant
#
# BENCH_PARTS picks the parts: any of "events memory e2e storm throughput"
# (default all; "events" is 1 and 2).
#
# Writes $BENCH_OUT/results.md (the report), $BENCH_OUT/raw.txt (every
# key=value line) and logs beside them. Needs root (the ledger must be
# root-owned, as in production). Exit status: 0 unless a step could not run;
# 1 if a part on the private cluster (e2e, throughput) failed: its ERROR
# lines (variant and cause) on stderr, none of its numbers in the report.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root" || exit 1

BIN=${BENCH_BIN:-build/bench/bench_events}
STORM_BIN=${BENCH_STORM_BIN:-build/bench/bench_storm}
CLI=${BENCH_CLI:-build/restore-budget}
OUT=${BENCH_OUT:-build/bench}
TMPFS_MAXREC=0
DISK_MAXREC=0
EVENTS=${BENCH_EVENTS:-10000}
RECORDS=${BENCH_RECORDS:-10 10000 100000 1000000}
FSLIST=${BENCH_FS:-tmpfs disk}
DISK_DIR=${BENCH_DISK_DIR:-/var/tmp}
RSS_EVENTS=${BENCH_RSS_EVENTS:-100000}
VG_EVENTS=${BENCH_VALGRIND_EVENTS:-300}
CLI_RECORDS=${BENCH_CLI_RECORDS:-100000}
E2E_RUNS=${BENCH_E2E_RUNS:-30}
E2E_CALL_JOBS=${BENCH_E2E_CALL_JOBS:-10}
STORE=${BENCH_STORE:-dir}
PARTS=${BENCH_PARTS:-events memory e2e storm throughput}
STORM_NODES=${BENCH_STORM_NODES:-1 16 64 256 1024}
STORM_REPS=${BENCH_STORM_REPS:-5}
TP_JOBS=${THROUGHPUT_JOBS:-300}
TP_ROUNDS=${THROUGHPUT_ROUNDS:-6}
TP_ARRAY=${THROUGHPUT_ARRAY:-300}
TP_AROUNDS=${THROUGHPUT_ARRAY_ROUNDS:-4}
CLUSTER=bench
# part NAME - 0 if BENCH_PARTS asks for it
part() { [[ " $PARTS " == *" $1 "* ]]; }

[[ $(id -u) == 0 ]] || { echo "bench: needs root (the ledger must be root-owned)" >&2; exit 1; }
[[ -x $BIN && -x $CLI ]] || { echo "bench: build first: make $BIN $CLI" >&2; exit 1; }
part storm && { [[ -x $STORM_BIN ]] || { echo "bench: build first: make $STORM_BIN" >&2; exit 1; }; }

mkdir -p "$OUT"
RAW=$OUT/raw.txt
NOTES=$OUT/notes.txt
: >"$RAW"
: >"$NOTES"
log() { printf '[bench %s] %s\n' "$(date +%T)" "$*" >&2; }
note() { printf '%s\n' "$*" >>"$NOTES"; log "note: $*"; }
raw() { printf '%s\n' "$*" >>"$RAW"; }
t_start=$(date +%s)
# part_error PART LOG - a part on the private cluster failed (a variant's
# batch, the plugin unreadable by the job user, the cluster): its numbers
# stay out of the report (no row of 0 jobs), its ERROR lines go to stderr
# and the notes, and the bench exits 1.
errors=0
part_error() {
    local name=$1 logf=$2 line
    errors=$((errors + 1))
    while IFS= read -r line; do
        printf 'bench: %s\n' "${line#bench: }" >&2
        printf '%s\n' "$line" >>"$NOTES"
    done < <(grep -E 'ERROR' "$logf" || grep -Ei 'error' "$logf" | tail -n 1 | sed 's/^/ERROR: /' | grep . ||
        echo "ERROR: $name failed without an error line")
    note "ERROR: $name: not measured (see $logf)"
}

# Sizes, ascending and unique.
read -r -a SIZES <<<"$(tr ' ' '\n' <<<"$RECORDS" | grep -E '^[0-9]+$' | sort -n -u | tr '\n' ' ')"
MAXREC=${SIZES[-1]:-10}

mounts=()
dirs=()
cleanup() {
    local d m
    for d in "${dirs[@]}"; do [[ -d $d ]] && rm -rf --one-file-system "$d"; done
    for m in "${mounts[@]}"; do umount "$m" 2>/dev/null && rmdir "$m"; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- where: a private tmpfs (sized for the records) and a dir on disk ------
# A record costs ~3 inodes (.rec, .log, ack/<id>) and ~8 KiB of tmpfs pages.
fs_dir() { # FS -> BASE = a fresh base dir (not in a subshell: it records mounts)
    local fs=$1 need_inodes need_kb avail_kb d
    need_inodes=$((3 * MAXREC + 3 * EVENTS + 100000))
    need_kb=$((9 * MAXREC + 20 * EVENTS + 100000))
    case $fs in
    tmpfs)
        avail_kb=$(awk '/MemAvailable/ { print $2 }' /proc/meminfo)
        local maxrec=$MAXREC
        while ((need_kb > avail_kb / 2 && maxrec > 10)); do
            maxrec=$((maxrec / 10))
            need_kb=$((9 * maxrec + 20 * EVENTS + 100000))
            need_inodes=$((3 * maxrec + 3 * EVENTS + 100000))
        done
        ((maxrec < MAXREC)) && note "tmpfs: scaled down to $maxrec records (MemAvailable ${avail_kb} KiB; ~9 KiB RAM per record)"
        TMPFS_MAXREC=$maxrec
        d=$(mktemp -d /tmp/rb-bench-tmpfs.XXXXXX) || return 1
        if mount -t tmpfs -o "size=${need_kb}k,nr_inodes=${need_inodes},mode=755" rb-bench "$d"; then
            mounts+=("$d")
        else
            rmdir "$d"
            note "tmpfs: could not mount a private tmpfs; using /dev/shm"
            d=$(mktemp -d /dev/shm/rb-bench.XXXXXX) || return 1
            dirs+=("$d")
        fi
        ;;
    disk)
        local free_inodes free_kb
        free_inodes=$(df --output=iavail "$DISK_DIR" | tail -n 1 | tr -d ' ')
        free_kb=$(df --output=avail -k "$DISK_DIR" | tail -n 1 | tr -d ' ')
        # ext4: 4 KiB block per small file and per directory.
        need_kb=$((12 * MAXREC + 40 * EVENTS + 100000))
        DISK_MAXREC=$MAXREC
        while ((DISK_MAXREC > 10 && (need_inodes > free_inodes / 2 || need_kb > free_kb / 2))); do
            DISK_MAXREC=$((DISK_MAXREC / 10))
            need_inodes=$((3 * DISK_MAXREC + 3 * EVENTS + 100000))
            need_kb=$((12 * DISK_MAXREC + 40 * EVENTS + 100000))
        done
        ((DISK_MAXREC < MAXREC)) && note "disk: scaled down to $DISK_MAXREC records ($free_inodes free inodes, $free_kb KiB free on $DISK_DIR)"
        d=$(mktemp -d "$DISK_DIR/rb-bench.XXXXXX") || return 1
        dirs+=("$d")
        ;;
    *) return 1 ;;
    esac
    chmod 755 "$d"
    BASE=$d
}

# ---- machine -----------------------------------------------------------------
raw "machine nproc=$(nproc) cpu=\"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)\" kernel=$(uname -r) mem_kb=$(awk '/MemTotal/ { print $2 }' /proc/meminfo)"
raw "loadavg_start $(cut -d' ' -f1-3 /proc/loadavg)"
raw "store name=$STORE"

# ---- 1 + 2: event cost and scale ----------------------------------------------
# The notes go to a run_dir on tmpfs for both filesystems: node-local, as
# /run/restore_budget is in production (docs/architecture.md).
RUN_DIR_BASE=$(mktemp -d /dev/shm/rb-bench-run.XXXXXX) || exit 1
dirs+=("$RUN_DIR_BASE")
run_events() { # FS K BASE [old]
    local fs=$1 k=$2 base=$3 glue=${4:-} idbase label=$1/$2 flags=()
    idbase=$((3000000001 + ${#done_sizes[@]} * 10000000))
    # the old glue's jobs: their own ids, beside the new glue's
    [[ $glue == old ]] && { idbase=$((idbase + 5000000)); label=$label/old; flags=(--old-glue); }
    log "$fs: $EVENTS events with $k records in state_dir${glue:+ (old glue)}"
    "$BIN" run --state "$base/state" --config "$base/rb.conf" --cluster $CLUSTER \
        --events "$EVENTS" --warmup 300 --id-base "$idbase" --label "$label" \
        --run-dir "$RUN_DIR_BASE/$fs" "${flags[@]}" \
        >"$OUT/events-$fs-$k$glue.log" 2>&1 || { note "$label: bench_events failed: $(tail -n 2 "$OUT/events-$fs-$k$glue.log")"; return 1; }
    grep -E '^(result|floor)' "$OUT/events-$fs-$k$glue.log" | sed "s|^floor |floor label=$label |" >>"$RAW"
}

run_cli() { # FS K BASE
    local fs=$1 k=$2 base=$3 cmd t0 t1 out rc name
    for name in list gc; do
        if [[ $name == list ]]; then cmd=("$CLI" --config "$base/rb.conf" --cluster $CLUSTER list)
        else cmd=("$CLI" --config "$base/rb.conf" --cluster $CLUSTER gc --older-than 30 --dry-run); fi
        t0=$(date +%s.%N)
        /usr/bin/time -f '%e %U %S %M' -o "$OUT/cli-time.tmp" "${cmd[@]}" >"$OUT/cli-$name-$fs.out" 2>"$OUT/cli-$name-$fs.err"
        rc=$?
        t1=$(date +%s.%N)
        read -r el us sy rss <"$OUT/cli-time.tmp"
        raw "cli label=$fs/$k cmd=$name rc=$rc wall_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') user_s=$us sys_s=$sy maxrss_kb=$rss lines=$(wc -l <"$OUT/cli-$name-$fs.out") last=\"$(tail -n 1 "$OUT/cli-$name-$fs.out" | cut -c1-100)\""
    done
    rm -f "$OUT/cli-time.tmp"
}

EVENT_FS=$FSLIST
part events || EVENT_FS=""
for fs in $EVENT_FS; do
    fs_dir "$fs" || { note "$fs: no place to run"; continue; }
    base=$BASE
    [[ $fs == tmpfs ]] && lim=$TMPFS_MAXREC || lim=$DISK_MAXREC
    raw "fs label=$fs dir=$base type=$(df --output=fstype "$base" | tail -n 1 | tr -d " ") device=\"$(df --output=source "$base" | tail -n 1)\""
    mkdir -m 755 "$base/state"
    "$BIN" config --state "$base/state" --out "$base/rb.conf"
    prev=0
    done_sizes=()
    for k in "${SIZES[@]}"; do
        ((k > lim)) && { note "$fs: $k records skipped (limit $lim)"; continue; }
        if ((k > prev)); then
            log "$fs: populating records $((prev + 1))..$k"
            "$BIN" populate --state "$base/state" --cluster $CLUSTER --from $((prev + 1)) --to "$k" \
                >"$OUT/populate-$fs-$k.log" 2>&1 || { note "$fs: populate to $k failed: $(tail -n 1 "$OUT/populate-$fs-$k.log")"; break; }
            t0=$(date +%s.%N); sync -f "$base/state"; t1=$(date +%s.%N)
            raw "$(sed "s|^populate |populate label=$fs/$k |" "$OUT/populate-$fs-$k.log") sync_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') du_kb=$(du -sk "$base/state" | cut -f1) inodes=$(df --output=iused "$base" | tail -n 1 | tr -d ' ')"
            prev=$k
        fi
        run_events "$fs" "$k" "$base"
        ((${#done_sizes[@]} == 0)) && run_events "$fs" "$k" "$base" old
        ((k == CLI_RECORDS)) && run_cli "$fs" "$k" "$base"
        done_sizes+=("$k")
    done
    # one job's log appended to 10000 times (docs/architecture.md, "The
    # ledger": folded within its 64 KiB cap); the line lands in the notes
    for b in 4000 300; do
        mkdir -m 755 "$base/append-$b"
        a=$("$BIN" append --state "$base/append-$b" --events 10000 --bytes "$b" 2>&1) &&
            note "$fs: event append cost: $a" || note "$fs: append bench failed: $a"
        rm -rf --one-file-system "${base:?}/append-$b"
    done
    log "$fs: removing the state dir"
    t0=$(date +%s.%N)
    rm -rf --one-file-system "${base:?}/state" "$base/floor"
    t1=$(date +%s.%N)
    raw "cleanup label=$fs rm_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
done

# ---- 4: memory -------------------------------------------------------------------
if part memory; then
    mem=$(mktemp -d /dev/shm/rb-bench-mem.XXXXXX) && dirs+=("$mem") && chmod 755 "$mem" && mkdir -m 755 "$mem/state" &&
        "$BIN" config --state "$mem/state" --out "$mem/rb.conf"
    # (bench_events keeps its notes in <state>.run: here on /dev/shm too)
    log "memory: $RSS_EVENTS events, RSS every 10000"
    "$BIN" run --state "$mem/state" --config "$mem/rb.conf" --cluster $CLUSTER --events "$RSS_EVENTS" \
        --warmup 9 --rss-every 10000 --no-floor --label rss >"$OUT/rss.log" 2>&1 || note "rss run failed"
    grep '^rss ' "$OUT/rss.log" >>"$RAW"
    rm -rf "$mem/state"; mkdir -m 755 "$mem/state"
    if command -v valgrind >/dev/null; then
        log "memory: valgrind --leak-check=full over $VG_EVENTS events"
        valgrind --leak-check=full --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible \
            --log-file="$OUT/valgrind.log" "$BIN" run --state "$mem/state" --config "$mem/rb.conf" --cluster $CLUSTER \
            --events "$VG_EVENTS" --warmup 9 --no-floor --label valgrind >/dev/null 2>&1
        raw "valgrind events=$VG_EVENTS $(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/errors=\1/p' "$OUT/valgrind.log" | tail -n 1) definitely_lost=\"$(sed -n 's/.*definitely lost: //p' "$OUT/valgrind.log" | tail -n 1)\" in_use_at_exit=\"$(sed -n 's/.*in use at exit: //p' "$OUT/valgrind.log" | tail -n 1)\" leaks_found=$(grep -c 'are definitely lost\|are indirectly lost\|are possibly lost' "$OUT/valgrind.log")"
    fi
fi

# ---- 3: end to end ---------------------------------------------------------------
if part e2e && ((E2E_RUNS > 0)); then
    log "end to end: $E2E_RUNS runs per variant (tests/bench/e2e.sh)"
    if BENCH_E2E_RUNS=$E2E_RUNS BENCH_E2E_CALL_JOBS=$E2E_CALL_JOBS BENCH_STORE=$STORE BENCH_OUT=$OUT BENCH_PLUGIN=${BENCH_PLUGIN:-build/restore_budget.so} \
        "$here/e2e.sh" >"$OUT/e2e.log" 2>&1; then
        grep -E '^e2e ' "$OUT/e2e.log" >>"$RAW"
    else
        part_error e2e "$OUT/e2e.log"
    fi
fi

# ---- 5: the prolog storm ---------------------------------------------------------
# One state_dir per filesystem: tmpfs (/dev/shm, no I/O: the locking alone)
# and disk (BENCH_DISK_DIR, fsync included).
storm_dir() { # FS -> a fresh dir
    case $1 in
    tmpfs) mktemp -d /dev/shm/rb-storm.XXXXXX ;;
    disk) mktemp -d "$DISK_DIR/rb-storm.XXXXXX" ;;
    *) return 1 ;;
    esac
}
if part storm; then
    for fs in $FSLIST; do
        sd=$(storm_dir "$fs") || { note "storm: no place on $fs"; continue; }
        dirs+=("$sd")
        chmod 755 "$sd" && mkdir -m 755 "$sd/state" && "$BIN" config --state "$sd/state" --out "$sd/rb.conf"
        # the harness's own floor (no work), once: waking N processes on
        # this machine's few CPUs is part of every span
        # ledger: the prolog before issue 12 (every node); note: after it
        modes=(ledger note)
        [[ -z ${storm_floor_done:-} ]] && modes=(noop ledger note) && storm_floor_done=1
        mkdir -m 755 "$sd/state.run"
        for mode in "${modes[@]}"; do
            # one label per filesystem and mode (the report's rows and
            # targets go by label); a job id range per mode, so no mode
            # finds another's records
            label=$fs-$mode id_base=7000001
            [[ $mode == note ]] && id_base=57000001
            [[ $mode == noop ]] && label=noop
            log "storm ($label, $mode): N = $STORM_NODES, $STORM_REPS repetitions each"
            "$STORM_BIN" --state "$sd/state" --config "$sd/rb.conf" --mode "$mode" --nodes "$STORM_NODES" \
                --reps "$STORM_REPS" --label "$label" --id-base "$id_base" >"$OUT/storm-$label.log" 2>&1 ||
                note "storm ($label): a worker or a step failed: $(grep -v '^storm' "$OUT/storm-$label.log" | tail -n 1)"
            grep -E '^storm' "$OUT/storm-$label.log" >>"$RAW"
        done
        rm -rf --one-file-system "$sd"
    done
fi

# ---- 6: throughput ------------------------------------------------------------------
if part throughput && ((TP_JOBS + TP_ARRAY > 0)); then
    log "throughput: $TP_JOBS jobs per variant in $TP_ROUNDS rounds, a $TP_ARRAY-task array per variant in $TP_AROUNDS rounds (tests/bench/throughput.sh)"
    THROUGHPUT_JOBS=$TP_JOBS THROUGHPUT_ROUNDS=$TP_ROUNDS THROUGHPUT_ARRAY=$TP_ARRAY THROUGHPUT_ARRAY_ROUNDS=$TP_AROUNDS \
        BENCH_STORE=$STORE BENCH_OUT=$OUT BENCH_PLUGIN=${BENCH_PLUGIN:-build/restore_budget.so} \
        "$here/throughput.sh" >"$OUT/throughput.log" 2>&1
    if (($? == 0)); then
        grep -E '^throughput(_array[a-z_]*)? ' "$OUT/throughput.log" >>"$RAW"
    else
        part_error throughput "$OUT/throughput.log"
    fi
fi

raw "loadavg_end $(cut -d' ' -f1-3 /proc/loadavg)"
raw "elapsed_s $(($(date +%s) - t_start))"

# ---- report ------------------------------------------------------------------------
rerun="make bench BENCH_PARTS=\"$PARTS\" BENCH_EVENTS=\"$EVENTS\" BENCH_RECORDS=\"$RECORDS\" BENCH_FS=\"$FSLIST\" BENCH_E2E_RUNS=$E2E_RUNS BENCH_E2E_CALL_JOBS=$E2E_CALL_JOBS BENCH_STORE=$STORE BENCH_RSS_EVENTS=$RSS_EVENTS BENCH_STORM_NODES=\"$STORM_NODES\" BENCH_STORM_REPS=$STORM_REPS THROUGHPUT_JOBS=$TP_JOBS THROUGHPUT_ROUNDS=$TP_ROUNDS THROUGHPUT_ARRAY=$TP_ARRAY THROUGHPUT_ARRAY_ROUNDS=$TP_AROUNDS"
SIZES_STR="${SIZES[*]}" RERUN=$rerun awk -f "$here/report.awk" "$NOTES" "$RAW" >"$OUT/results.md"
log "wrote $OUT/results.md"
cat "$OUT/results.md"
((errors == 0)) || { printf 'bench: ERROR: %d part(s) failed; their numbers are not in %s\n' "$errors" "$OUT/results.md" >&2; exit 1; }
exit 0
