/**
 * The orphan guard's program (orphan-guard.ts starts it): `/bin/sh` code that runs in a
 * process of its own, after the wrapper may be gone, so it can use nothing of the package.
 * Its interface:
 * - arguments: $1 the run token's environment entry (`PI_SUBAGENT_RUN_TOKEN=<token>`),
 *   $2 the result.json reserve to remove (or empty), $3 the run's own temp folder to remove
 *   with all it holds (run-temp.ts; or empty);
 * - stdin, one word a line: `pgid N` (the child's process group), `done` (that group is gone:
 *   never signal the number again), `exit` (the wrapper ended everything itself: exit at once).
 * When stdin closes without `exit`, it removes the reserve and the temp files of a result.json
 * write beside it, and the run's temp folder (the task's text among what it holds), then sends SIGTERM to the group and to every process whose /proc environ
 * holds the token entry, and SIGKILL to what is still there once what the SIGTERM reached is
 * gone or GUARD_KILL_AFTER_S have passed. Zombies count as gone; without /proc the group is
 * asked with signal 0.
 * The wait is a deadline on the clock of /proc/uptime (hundredths of a second), not a count
 * of sleeps: on a loaded machine each look (a scan of /proc) takes time of its own, and ten
 * sleeps of 0.1 s with a scan after each came close to two seconds. Without /proc/uptime it
 * counts GUARD_POLLS_PER_S sleeps per second, the only clock /bin/sh has there.
 */

/** The longest the guard waits between SIGTERM and SIGKILL, in whole seconds. */
export const GUARD_KILL_AFTER_S = 1;
/** How often, in that wait, it looks whether what it signalled is gone (tenths of a second). */
export const GUARD_POLLS_PER_S = 10;

/** The program, for `/bin/sh -c` (orphan-guard.ts guardCommand). */
export const GUARD_SCRIPT = `
needle=$1 reserve=$2 runtmp=$3 pg=
while read -r word arg; do
  case $word in
    pgid) pg=$arg ;;
    done) pg= ;;
    exit) exit 0 ;;
  esac
done
if [ -n "$reserve" ]; then
  rm -f -- "$reserve"
  for f in "\${reserve%reserve}"*.tmp; do [ -f "$f" ] && rm -f -- "$f"; done
fi
[ -n "$runtmp" ] && rm -rf -- "$runtmp"
end() {
  hit= pids=
  if [ -n "$pg" ] && kill -s "$1" -- "-$pg" 2>/dev/null; then hit=1; fi
  for f in $(grep -lF -e "$needle" /proc/[0-9]*/environ 2>/dev/null); do
    p=\${f#/proc/}
    p=\${p%/environ}
    kill -s "$1" "$p" 2>/dev/null && hit=1 pids="$pids $p"
  done
  [ -n "$hit" ]
}
alive() {
  for f in /proc/[0-9]*/stat; do
    { read -r line < "$f"; } 2>/dev/null || continue
    set -- \${line##*) }
    case $1 in Z | X) continue ;; esac
    [ -n "$pg" ] && [ "$3" = "$pg" ] && return 0
    p=\${f#/proc/}
    case " $pids " in *" \${p%/stat} "*) return 0 ;; esac
  done
  [ ! -d /proc/self ] && [ -n "$pg" ] && kill -s 0 -- "-$pg" 2>/dev/null
}
# now: hundredths of a second since boot, from /proc/uptime ("12345.67"); empty without it.
clock() {
  now=
  { read -r up rest < /proc/uptime; } 2>/dev/null || return 0
  now=\${up%.*}\${up#*.}
  while :; do case $now in 0?*) now=\${now#0} ;; *) break ;; esac; done
}
if end TERM; then
  clock
  deadline=\${now:+$((now + ${GUARD_KILL_AFTER_S * 100}))}
  # Tenths where sleep takes them (GNU, busybox, BSD); whole seconds where it does not.
  if sleep 0.1 2>/dev/null; then step=0.1 n=${GUARD_KILL_AFTER_S * GUARD_POLLS_PER_S - 1}; else step=1 n=${GUARD_KILL_AFTER_S}; fi
  while alive; do
    if [ -n "$deadline" ]; then
      clock
      [ -n "$now" ] && [ "$now" -lt "$deadline" ] || break
    else
      [ "$n" -gt 0 ] || break
      n=$((n - 1))
    fi
    sleep "$step"
  done
  end KILL
fi
exit 0
`;
