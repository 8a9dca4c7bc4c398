#!/usr/bin/python3
"""A launcher for `mpisim run --mpirun` that first points N idle connections at the model server
(from MPISIM_SERVER, as a local stranger would find it), keeps them open for the whole run and
reopens any the server drops, then runs the real mpirun with the arguments it was given.

usage: mpisim run --mpirun idle_launcher.py ...   (N from MPISIM_IDLE_CONNECTIONS, default 400)
"""
import os
import socket
import sys
import time

n = int(os.environ.get("MPISIM_IDLE_CONNECTIONS", "400"))
host, port = os.environ["MPISIM_SERVER"].rsplit(":", 1)
r, w = os.pipe()
if os.fork() == 0:
    # the attacker: lives until the launcher (the exec'd mpirun) goes, at most 10 minutes
    os.close(w)
    socks = []
    end = time.time() + 600
    opened = 0
    while time.time() < end:
        socks = [s for s in socks if s.fileno() >= 0]
        alive = []
        for s in socks:   # a socket the server closed reads as EOF: reopen it
            try:
                s.setblocking(False)
                if s.recv(1) == b"":
                    s.close()
                    continue
            except BlockingIOError:
                pass
            except OSError:
                s.close()
                continue
            alive.append(s)
        socks = alive
        while len(socks) < n:
            try:
                s = socket.create_connection((host, int(port)), timeout=1)
                socks.append(s)
                opened += 1
            except OSError:
                break
        import select
        if select.select([r], [], [], 0.5)[0]:   # idle: a round of reopening every half second
            break   # the launcher ended
    sys.stderr.write("idle_launcher: %d connections opened\n" % opened)
    os._exit(0)
os.close(r)
os.set_inheritable(w, True)   # held by mpirun after the exec: the attacker sees EOF when it ends
time.sleep(1.0)   # the connections are in place before the ranks start
os.execvp("mpirun", ["mpirun"] + sys.argv[1:])
