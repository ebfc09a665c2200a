# shellcheck shell=bash
# accounting.sh - a private slurmdbd with its own MariaDB for a cluster of
# cluster.sh (RB_ACCOUNTING=1), sourced by cluster.sh.  Debian's packages
# (slurmdbd, mariadb-server), nothing of the host's: under DIR/
#   db/ (datadir), run/mariadb.sock, run/{mariadbd,slurmdbd}.pid,
#   log/{mariadbd,slurmdbd}.log, slurmdbd.conf (root, 0600),
# MariaDB on 127.0.0.1 on a free port (only slurmdbd talks to it), slurmdbd
# on another.  slurm.conf then names slurmdbd and, as AccountingStoragePass,
# the cluster's private munge socket (without it slurmctld and sacctmgr look
# in /run/munge: SLURM-FACTS).  MariaDB runs without TLS (--skip-ssl): over
# TLS, Debian's slurmdbd 24.11 and 26.05 die at start against MariaDB 11.8
# ("5027 Number of columns in result ... _check_mysql_concat_is_sane"; the
# same query works without TLS; seen on trixie and sid).  slurmdbd then
# falls back from TLS once, 5 s after its first try.

RBC_DB_PASS=rb-private-db

# rbc_acct_mariadb DIR PORT - initialize the datadir and start mariadbd.
rbc_acct_mariadb() {
    local dir=$1 port=$2 i
    mkdir -p "$dir/db" || return 1
    timeout 120 mariadb-install-db --no-defaults --datadir="$dir/db" --user=root \
        --auth-root-authentication-method=normal --skip-test-db >"$dir/log/mariadb-install.log" 2>&1 ||
        { tail -n 5 "$dir/log/mariadb-install.log" >&2; rbc_die "mariadb-install-db failed"; return 1; }
    rbc_daemon mariadbd --no-defaults --datadir="$dir/db" --user=root --port="$port" \
        --bind-address=127.0.0.1 --socket="$dir/run/mariadb.sock" \
        --pid-file="$dir/run/mariadbd.pid" --log-error="$dir/log/mariadbd.log" \
        --skip-log-bin --innodb-buffer-pool-size=32M --skip-ssl >/dev/null 2>&1 &
    for ((i = 0; i < 300; i++)); do [[ -S $dir/run/mariadb.sock ]] && break; sleep 0.1; done
    [[ -S $dir/run/mariadb.sock ]] || { tail -n 5 "$dir/log/mariadbd.log" >&2; rbc_die "mariadbd did not start"; return 1; }
    timeout 30 mariadb --no-defaults --skip-ssl --socket="$dir/run/mariadb.sock" -uroot -e \
        "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$RBC_DB_PASS';
         GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
         CREATE USER 'slurm'@'localhost' IDENTIFIED BY '$RBC_DB_PASS';
         GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';" ||
        { rbc_die "cannot create the slurm database user"; return 1; }
}

# rbc_acct_slurmdbd DIR DB_PORT DBD_PORT - slurmdbd.conf, then slurmdbd,
# until it listens.
rbc_acct_slurmdbd() {
    local dir=$1
    (umask 077 && cat >"$dir/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$3
SlurmUser=root
PidFile=$dir/run/slurmdbd.pid
LogFile=$dir/log/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$2
StorageUser=slurm
StoragePass=$RBC_DB_PASS
StorageLoc=slurm_acct_db
EOF
    ) || return 1
    rbc_acct_dbd_start "$dir"
}

# rbc_acct_dbd_start DIR - start slurmdbd on DIR/slurmdbd.conf (written by
# rbc_acct_slurmdbd), until it listens on its DbdPort.
rbc_acct_dbd_start() {
    local dir=$1 port i
    port=$(sed -n 's/^DbdPort=\([0-9]*\)$/\1/p' "$dir/slurmdbd.conf" 2>/dev/null)
    [[ -n $port ]] || { rbc_die "$dir/slurmdbd.conf: no DbdPort= line (rbc_acct_slurmdbd writes it)"; return 1; }
    # slurmdbd takes no config path: it reads slurmdbd.conf beside
    # $SLURM_CONF. Its argv[0] names DIR so that stop can prove it is ours.
    rbc_daemon SLURM_CONF="$dir/slurm.conf" bash -c 'exec -a "slurmdbd@$1/" slurmdbd' _ "$dir" ||
        { tail -n 10 "$dir/log/slurmdbd.log" >&2; rbc_die "slurmdbd failed to start"; return 1; }
    for ((i = 0; i < 300; i++)); do
        [[ -n $(ss -Htln "( sport = :$port )" 2>/dev/null) ]] && return 0
        sleep 0.1
    done
    tail -n 10 "$dir/log/slurmdbd.log" >&2
    rbc_die "slurmdbd does not listen on port $port"
}

# rbc_acct_dbd_stop DIR TIMEOUT - stop slurmdbd alone (MariaDB stays): the
# soak's "dbd" fault (tests/soak/soak.sh), then rbc_acct_dbd_start.
rbc_acct_dbd_stop() {
    local pid
    pid=$(rbc_pid_of "$1" slurmdbd) || { rbc_die "no slurmdbd of $1 runs"; return 1; }
    rbc_kill_wait "$2" "$pid"
}

# rbc_acct_start DIR CLUSTER - MariaDB and slurmdbd up, the cluster added;
# appends slurm.conf's accounting lines (call after slurm.conf is written,
# before slurmctld starts).
rbc_acct_start() {
    local dir=$1 cluster=$2 dbp dbdp
    dbp=$(rbc_free_port) && dbdp=$(rbc_free_port "$dbp") || return 1
    rbc_acct_mariadb "$dir" "$dbp" || return 1
    rbc_acct_slurmdbd "$dir" "$dbp" "$dbdp" || return 1
    sed -i -e '/^AccountingStorageType=/d' -e '/^JobAcctGatherType=/d' "$dir/slurm.conf" || return 1
    cat >>"$dir/slurm.conf" <<EOF

# accounting (RB_ACCOUNTING=1: contrib/cluster/accounting.sh)
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$dbdp
AccountingStoragePass=$dir/munge/munge.socket
JobAcctGatherType=jobacct_gather/none
EOF
    rbc_client "$dir" sacctmgr -i add cluster "$cluster" >/dev/null ||
        { rbc_die "sacctmgr add cluster $cluster failed"; return 1; }
}

# rbc_acct_stop DIR TIMEOUT - stop slurmdbd, then MariaDB (rbc_pid_of:
# only a pid whose command line names DIR).
rbc_acct_stop() {
    local p pid
    for p in slurmdbd mariadbd; do
        pid=$(rbc_pid_of "$1" "$p") && rbc_kill_wait "$2" "$pid"
    done
    return 0
}
