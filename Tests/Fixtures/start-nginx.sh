#!/usr/bin/env bash
# Starts a private nginx for Salvo's integration tests.
#
#   start-nginx.sh DIR [--lifetime SECONDS]
#
# DIR (created if missing) receives everything: nginx.conf, the pid file, the
# error log, temp directories and the static files in DIR/www (1k, 64k, 1m,
# head).  The config is rendered from nginx.conf.template next to this script.
# nginx listens on 127.0.0.1 at a free port chosen here (retried if another
# process grabs it first), runs as the current user, in a single process, in
# the foreground, as a child of this script.
#
# Once nginx accepts connections the script prints, flushed, exactly:
#   PORT <n>
#   PID <nginx pid>
# and then waits for nginx to exit and exits with its status.  To stop it,
# send SIGTERM to the nginx pid (or to this script, which forwards it), then
# reap this script.  A watchdog also stops nginx when this script's parent
# goes away (e.g. the test process died) or after --lifetime seconds (default
# 600; 0 = no limit).
#
# Environment: NGINX (nginx binary; default /usr/sbin/nginx or the one on PATH).

set -u

die() {
    echo "start-nginx.sh: $*" >&2
    exit 1
}

DIR=""
LIFETIME=600
while [ $# -gt 0 ]; do
    case "$1" in
        --lifetime) [ $# -ge 2 ] || die "--lifetime needs a value"; LIFETIME=$2; shift 2 ;;
        --lifetime=*) LIFETIME=${1#*=}; shift ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        -*) die "unknown option $1" ;;
        *) [ -z "$DIR" ] || die "only one DIR"; DIR=$1; shift ;;
    esac
done
[ -n "$DIR" ] || die "usage: start-nginx.sh DIR [--lifetime SECONDS]"
case "$LIFETIME" in ''|*[!0-9]*) die "--lifetime must be whole seconds" ;; esac

HERE=$(cd "$(dirname "$0")" && pwd -P) || die "cannot locate the script directory"
TEMPLATE="$HERE/nginx.conf.template"
[ -r "$TEMPLATE" ] || die "missing $TEMPLATE"

if [ -z "${NGINX:-}" ]; then
    if [ -x /usr/sbin/nginx ]; then NGINX=/usr/sbin/nginx; else NGINX=$(command -v nginx) || die "nginx not found"; fi
fi

mkdir -p "$DIR" || die "cannot create $DIR"
DIR=$(cd "$DIR" && pwd -P) || die "cannot enter $DIR"
case "$DIR" in *'"'*|*'$'*|*'\'*|*';'*|*'{'*|*'}'*) die "DIR must not contain quotes, \$, \\, ;, { or }" ;; esac
mkdir -p "$DIR/www" "$DIR/tmp" || die "cannot populate $DIR"

make_file() { # name size
    local f="$DIR/www/$1"
    if [ ! -f "$f" ] || [ "$(stat -c %s "$f")" != "$2" ]; then
        head -c "$2" /dev/urandom > "$f.part" && mv -f "$f.part" "$f" || die "cannot write $f"
    fi
}
make_file 1k 1024
make_file 64k 65536
make_file 1m 1048576
make_file head 4096
# Compressible text: served gzipped on the fly (/text.txt) and from a .gz made ahead
# (/static.txt, gzip_static); /dav/ takes uploads with PUT.
if [ ! -f "$DIR/www/text.txt" ]; then
    seq 1 40000 | sed 's/$/ salvo says hello to nginx/' > "$DIR/www/text.txt" || die "cannot write text.txt"
fi
cp -f "$DIR/www/text.txt" "$DIR/www/static.txt" && gzip -9 -n -c "$DIR/www/static.txt" > "$DIR/www/static.txt.gz" \
    || die "cannot write static.txt.gz"
mkdir -p "$DIR/www/dav" || die "cannot create $DIR/www/dav"

if [ "$(id -u)" = 0 ]; then
    USER_LINE="user $(id -un) $(id -gn);"
else
    USER_LINE=""  # nginx ignores `user` (with a warning) when not root
fi

# Connections are bounded by open files: raise the soft limit to the hard one
# and keep worker_connections under it (nginx warns otherwise).
ulimit -n "$(ulimit -Hn)" 2>/dev/null
NOFILE=$(ulimit -n)
if [ "$NOFILE" = unlimited ] || [ "$NOFILE" -ge 4160 ]; then
    WORKER_CONNECTIONS=4096
elif [ "$NOFILE" -ge 128 ]; then
    WORKER_CONNECTIONS=$((NOFILE - 64))
else
    WORKER_CONNECTIONS=64
fi
# More for memory tests that hold many connections (bounded by the open-file limit).
if [ -n "${SALVO_NGINX_CONNECTIONS:-}" ] && [ "$NOFILE" != unlimited ]; then
    WORKER_CONNECTIONS=$(( SALVO_NGINX_CONNECTIONS < NOFILE - 64 ? SALVO_NGINX_CONNECTIONS : NOFILE - 64 ))
elif [ -n "${SALVO_NGINX_CONNECTIONS:-}" ]; then
    WORKER_CONNECTIONS=$SALVO_NGINX_CONNECTIONS
fi

PY=""
for p in /usr/bin/python3 python3; do
    if command -v "$p" >/dev/null 2>&1; then PY=$p; break; fi
done

pick_port() {
    if [ -n "$PY" ]; then
        "$PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])' && return
    fi
    echo $(( 20000 + RANDOM % 40000 ))
}

render() { # port
    local conf
    conf=$(<"$TEMPLATE")
    # Quoted replacements: no pattern characters, no `&` expansion (bash 5.2).
    conf=${conf//@DIR@/"$DIR"}
    conf=${conf//@PORT@/"$1"}
    conf=${conf//@USER_LINE@/"$USER_LINE"}
    conf=${conf//@WORKER_CONNECTIONS@/"$WORKER_CONNECTIONS"}
    conf=${conf//@TLS_LISTEN@/"$TLS_LISTEN"}
    printf '%s\n' "$conf" > "$DIR/nginx.conf"
}

# The launcher may have handed us descriptors beyond 0-2 (Foundation's Process
# tracks its child's exit through one): nginx and the watchdog must not keep
# them, or the launcher would see this script end only when they do.
close_inherited_fds() {
    local fd
    for fd in /proc/$BASHPID/fd/*; do
        fd=${fd##*/}
        case "$fd" in ''|*[!0-9]*) continue ;; esac
        [ "$fd" -gt 2 ] && exec {fd}>&- 2>/dev/null
    done
}

# Blocked signals survive exec, and nginx does not unblock the ones it uses:
# if the launcher left some blocked, exec nginx through python with an empty
# mask, so that SIGTERM stops it.
exec_unblocked() {
    local line mask=""
    while read -r line; do
        case "$line" in SigBlk:*) mask=${line#SigBlk:} ;; esac
    done < "/proc/$BASHPID/status"
    mask=${mask//[[:space:]0]/}
    if [ -n "$mask" ] && [ -n "$PY" ]; then
        exec "$PY" -c 'import os, signal, sys
signal.pthread_sigmask(signal.SIG_SETMASK, [])
os.execv(sys.argv[1], sys.argv[1:])' "$@"
    fi
    exec "$@"
}

can_connect() { # port
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# HTTPS too when SALVO_NGINX_TLS_CERT and SALVO_NGINX_TLS_KEY name a PEM certificate and
# key: a second listener on TLSPORT (announced as "TLSPORT <n>"). With SALVO_NGINX_HTTP2=1
# that listener offers HTTP/2 through ALPN, and a third speaks HTTP/2 over cleartext with
# prior knowledge on H2CPORT (announced as "H2CPORT <n>").
TLS_LISTEN=""
TLSPORT=""
H2CPORT=""
if [ -n "${SALVO_NGINX_TLS_CERT:-}" ] && [ -n "${SALVO_NGINX_TLS_KEY:-}" ]; then
    TLSPORT=$(pick_port) || die "cannot pick a TLS port"
    H2=""
    if [ "${SALVO_NGINX_HTTP2:-}" = 1 ]; then
        H2=" http2"
        H2CPORT=$(pick_port) || die "cannot pick an h2c port"
    fi
    TLS_LISTEN="listen 127.0.0.1:$TLSPORT ssl$H2; ssl_certificate $SALVO_NGINX_TLS_CERT; ssl_certificate_key $SALVO_NGINX_TLS_KEY; ssl_protocols TLSv1.2 TLSv1.3;"
    if [ -n "$H2CPORT" ]; then
        TLS_LISTEN="$TLS_LISTEN listen 127.0.0.1:$H2CPORT http2;"
    fi
fi

NGINX_PID=""
PORT=""
started=0
for attempt in 1 2 3 4 5 6; do
    PORT=$(pick_port) || die "cannot pick a port"
    render "$PORT"
    rm -f "$DIR/nginx.pid"
    : > "$DIR/error.log"
    (close_inherited_fds; exec_unblocked "$NGINX" -p "$DIR/" -c "$DIR/nginx.conf" -e "$DIR/error.log") </dev/null >/dev/null &
    NGINX_PID=$!
    # Ready once nginx has written its pid file (after binding) and accepts.
    deadline=$((SECONDS + 10))
    while [ "$SECONDS" -lt "$deadline" ]; do
        if ! kill -0 "$NGINX_PID" 2>/dev/null; then
            break
        fi
        if [ -s "$DIR/nginx.pid" ] && [ "$(<"$DIR/nginx.pid")" = "$NGINX_PID" ] && can_connect "$PORT"; then
            started=1
            break
        fi
        sleep 0.02
    done
    [ "$started" = 1 ] && break
    if kill -0 "$NGINX_PID" 2>/dev/null; then
        kill -KILL "$NGINX_PID" 2>/dev/null
        wait "$NGINX_PID" 2>/dev/null
        die "nginx did not become ready within 10 s; $DIR/error.log: $(tail -n 5 "$DIR/error.log")"
    fi
    wait "$NGINX_PID" 2>/dev/null
    if grep -q "Address already in use" "$DIR/error.log"; then
        continue  # someone took the port between pick and bind; try another
    fi
    die "nginx failed to start; $DIR/error.log: $(tail -n 5 "$DIR/error.log")"
done
[ "$started" = 1 ] || die "could not bind a free port after several attempts"

SCRIPT_PID=$$
ORIG_PPID=$PPID

# Watchdog: stop nginx when the script or its parent goes away, or at the end
# of the lifetime.  Detached from stdout so the caller's pipe sees no writer.
(
    trap - TERM INT HUP
    close_inherited_fds
    start=$SECONDS
    # A zombie (exited, not yet reaped) counts as gone.
    alive() {
        local stat
        read -r stat < "/proc/$1/stat" 2>/dev/null || return 1
        stat=${stat##*) }
        [ "${stat%% *}" != Z ]
    }
    parent_ok() {
        local stat
        read -r stat < "/proc/$SCRIPT_PID/stat" 2>/dev/null || return 1
        stat=${stat##*) }
        set -- $stat
        [ "$2" = "$ORIG_PPID" ]
    }
    while alive "$NGINX_PID"; do
        if ! parent_ok || { [ "$LIFETIME" -gt 0 ] && [ $((SECONDS - start)) -ge "$LIFETIME" ]; }; then
            kill -TERM "$NGINX_PID" 2>/dev/null
            for _ in 1 2 3 4 5 6 7 8 9 10; do
                alive "$NGINX_PID" || exit 0
                sleep 0.3
            done
            kill -KILL "$NGINX_PID" 2>/dev/null
            exit 0
        fi
        sleep 0.5
    done
) </dev/null >/dev/null 2>&1 &
WATCHDOG_PID=$!

trap 'kill -TERM "$NGINX_PID" 2>/dev/null' TERM INT HUP

echo "PORT $PORT"
[ -n "$TLSPORT" ] && echo "TLSPORT $TLSPORT"
[ -n "$H2CPORT" ] && echo "H2CPORT $H2CPORT"
echo "PID $NGINX_PID"

status=0
while :; do
    wait "$NGINX_PID"
    status=$?
    # wait returns early (status > 128) when a trapped signal arrives.
    kill -0 "$NGINX_PID" 2>/dev/null || break
done
kill "$WATCHDOG_PID" 2>/dev/null
wait "$WATCHDOG_PID" 2>/dev/null
exit "$status"
