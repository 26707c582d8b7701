"""Recording real traces for the analysis tests: a private LTTng session daemon and sessions.

    with PrivateSessiond() as d:
        d.record(out_dir, ["/path/to/rl-example", "--duration", "1"])

The daemon runs under a temporary LTTNG_HOME and is always stopped (by its pid) and removed on
exit, even when the test fails. As root every `lttng-sessiond` uses the global /var/run/lttng, so
(as the Swift LTTngControl.PrivateSessionDaemon does) the daemon is started in its own mount
namespace with a private directory bind-mounted over /var/run/lttng; `lttng` commands enter that
namespace with nsenter, and traced programs reach the daemon through $LTTNG_HOME/.lttng. Several
such daemons (other engineers' test runs) never see each other.
"""

import os
import random
import shutil
import signal
import subprocess
import tempfile
import time

_ROOT_SCRIPT = ('mount --bind "$1" /var/run/lttng && '
                'exec "$2" --no-kernel --apps-sock="$3" --agent-tcp-port="$4"')


class LTTngError(RuntimeError):
    pass


class PrivateSessiond:
    def __init__(self, timeout=20.0):
        self.timeout = timeout
        self.home = None
        self.proc = None
        self.prefix = []

    # --- lifecycle ---------------------------------------------------------------------------

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        sessiond = shutil.which("lttng-sessiond")
        if sessiond is None:
            raise LTTngError("lttng-sessiond not found (scripts/install-deps.sh installs lttng-tools)")
        self.home = tempfile.mkdtemp(prefix="rl-analysis-lttng-")
        dot = os.path.join(self.home, ".lttng")
        rundir = os.path.join(self.home, "rundir")
        os.makedirs(dot)
        os.makedirs(rundir)
        self.env = dict(os.environ, LTTNG_HOME=self.home)
        self.env.pop("LTTNG_UST_REGISTER_TIMEOUT", None)
        log = open(os.path.join(self.home, "sessiond.log"), "wb")
        if os.geteuid() == 0:
            os.makedirs("/var/run/lttng", exist_ok=True)
            port = 20000 + (os.getpid() % 20000) + random.randrange(5000)
            argv = ["unshare", "-m", "--propagation", "private", "--", "/bin/sh", "-c", _ROOT_SCRIPT, "sh",
                    rundir, sessiond, os.path.join(dot, "lttng-ust-sock-8"), str(port)]
        else:
            argv = [sessiond, "--no-kernel"]
        try:
            self.proc = subprocess.Popen(argv, env=self.env, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        finally:
            log.close()
        if os.geteuid() == 0:
            self.prefix = ["nsenter", "--mount=/proc/%d/ns/mnt" % self.proc.pid, "--"]
        deadline = time.monotonic() + self.timeout
        app_sock = os.path.join(dot, "lttng-ust-sock-8")
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            r = subprocess.run(self.prefix + ["lttng", "--no-sessiond", "list"], env=self.env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if r.returncode == 0 and os.path.exists(app_sock):
                return
            time.sleep(0.05)
        with open(os.path.join(self.home, "sessiond.log"), "rb") as f:
            text = f.read().decode(errors="replace")
        self.stop()
        raise LTTngError("private lttng-sessiond did not become reachable:\n" + text)

    def stop(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None

    # --- commands ----------------------------------------------------------------------------

    def lttng(self, *args):
        r = subprocess.run(self.prefix + ["lttng", "--no-sessiond"] + list(args), env=self.env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if r.returncode != 0:
            raise LTTngError("lttng %s: exit %d\n%s%s" % (" ".join(args), r.returncode,
                                                          r.stdout.decode(errors="replace"),
                                                          r.stderr.decode(errors="replace")))
        return r.stdout.decode(errors="replace")

    def record(self, output, argv, session="rl-analysis", timeout=120, contexts=("vpid", "vtid", "procname"),
               start_after=0.0):
        """Records `argv` with every runloop event and `contexts` (none: as `rltrace record`
        records, the loop ids and loop_info naming processes and threads) into `output` (a new
        directory); returns the program's standard output. `start_after` > 0: the session starts
        that many seconds after the program (which has registered its items by then: only the
        constant pools' periodic descriptions name them)."""
        self.lttng("create", session, "--output=" + output)
        try:
            self.lttng("enable-event", "-u", "runloop:*")
            if contexts:
                self.lttng("add-context", "-u", *[a for c in contexts for a in ("-t", c)])
            if start_after > 0:
                p = subprocess.Popen(argv, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                try:
                    time.sleep(start_after)
                    self.lttng("start")
                    out, err = p.communicate(timeout=timeout)
                finally:
                    if p.poll() is None:
                        p.kill()
                        p.wait()
                r = subprocess.CompletedProcess(argv, p.returncode, out, err)
            else:
                self.lttng("start")
                r = subprocess.run(argv, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   timeout=timeout)
            self.lttng("stop")
        finally:
            try:
                self.lttng("destroy", session)
            except LTTngError:
                pass
        if r.returncode != 0:
            raise LTTngError("%s: exit %d\n%s" % (" ".join(argv), r.returncode, r.stderr.decode(errors="replace")))
        return r.stdout.decode(errors="replace")
