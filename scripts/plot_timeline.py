#!/usr/bin/python3
"""Draws a graphi Chrome trace (graphi run --trace, Session.trace, graphi_session_write_trace)
as a Gantt chart: one row per track (executors, scheduler, bootstrap), ops coloured by op type,
the critical path (the longest chain of dependent ops by measured time, from the ops'
`successors` args) outlined in black. Prints a summary (makespan, critical path, executor
utilisation) and with --table a per-op-type time table to stdout.

  /usr/bin/python3 scripts/plot_timeline.py TRACE.json -o timeline.png [--table]

Needs matplotlib (Debian: python3-matplotlib). docs/TRACING.md explains how to read the plot.
"""
import argparse
import collections
import json
import sys


def fail(msg):
    print("plot_timeline: " + msg, file=sys.stderr)
    sys.exit(1)


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        fail("%s: cannot read (%s)" % (path, e.strerror))
    except ValueError as e:
        fail("%s: not valid JSON (%s)" % (path, e))
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        fail("%s: no traceEvents array (not a Chrome trace)" % path)
    names, order, ops, sched = {}, {}, [], []
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            fail("%s: traceEvents[%d] is not an object" % (path, i))
        ph = ev.get("ph")
        if ph == "M" and ev.get("name") == "thread_name":
            names[ev.get("tid")] = ev.get("args", {}).get("name", str(ev.get("tid")))
        elif ph == "M" and ev.get("name") == "thread_sort_index":
            order[ev.get("tid")] = ev.get("args", {}).get("sort_index", 0)
        elif ph == "X":
            for field in ("tid", "ts", "dur", "name"):
                if field not in ev:
                    fail("%s: traceEvents[%d] (an 'X' event) has no '%s'" % (path, i, field))
            (ops if ev.get("cat", "op") == "op" else sched).append(ev)
    if not ops:
        fail("%s: no op events ('X' events of category 'op')" % path)
    other = doc.get("otherData", {}) if isinstance(doc, dict) else {}
    return names, order, ops, sched, other


def critical_path(ops):
    """Longest chain of dependent ops by measured duration: [event, ...] in run order."""
    by_id = {}
    for ev in ops:
        nid = ev.get("args", {}).get("node_id")
        if nid is not None:
            by_id[nid] = ev
    if not by_id:
        return []
    preds = collections.defaultdict(list)
    for nid, ev in by_id.items():
        for s in ev["args"].get("successors", []):
            if s in by_id:
                preds[s].append(nid)
    # Kahn's order over the traced nodes, then the longest path ending at each node.
    indeg = {n: len(preds[n]) for n in by_id}
    ready = [n for n, d in indeg.items() if d == 0]
    best, back, seen = {}, {}, 0
    while ready:
        n = ready.pop()
        seen += 1
        p = max(preds[n], key=lambda q: best[q], default=None)
        best[n] = by_id[n]["dur"] + (best[p] if p is not None else 0.0)
        back[n] = p
        for s in by_id[n]["args"].get("successors", []):
            if s in indeg:
                indeg[s] -= 1
                if indeg[s] == 0:
                    ready.append(s)
    if seen != len(by_id):
        fail("the successor edges in the trace form a cycle")
    n = max(best, key=best.get)
    path = []
    while n is not None:
        path.append(by_id[n])
        n = back[n]
    return path[::-1]


def op_table(ops, cp_ids):
    rows = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])  # count, total, max, on the path
    for ev in ops:
        r = rows[ev["name"]]
        r[0] += 1
        r[1] += ev["dur"]
        r[2] = max(r[2], ev["dur"])
        if id(ev) in cp_ids:
            r[3] += ev["dur"]
    return sorted(rows.items(), key=lambda kv: -kv[1][1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", help="Chrome Trace Event JSON written by graphi")
    ap.add_argument("-o", "--output", default="timeline.png", help="PNG to write (default timeline.png)")
    ap.add_argument("--table", action="store_true", help="print the per-op-type time table")
    ap.add_argument("--title", help="plot title (default: model, scheduler, config)")
    args = ap.parse_args()

    names, order, ops, sched, other = load(args.trace)
    cp = critical_path(ops)
    cp_ids = {id(ev) for ev in cp}
    cp_us = sum(ev["dur"] for ev in cp)
    start = min(ev["ts"] for ev in ops + sched)
    end = max(ev["ts"] + ev["dur"] for ev in ops + sched)
    makespan = other.get("makespan_us", end - start)

    # Rows: every named track and any tid with events, by sort index; executors on top.
    tids = set(names) | {ev["tid"] for ev in ops + sched}
    rows = sorted(tids, key=lambda t: (order.get(t, 1 << 30), t))
    label = {t: names.get(t, "tid %s" % t) for t in rows}
    busy = collections.defaultdict(float)
    for ev in ops:
        busy[ev["tid"]] += ev["dur"]

    table = op_table(ops, cp_ids)
    total = sum(r[1] for _, r in table) or 1.0
    print("%s: %d ops, makespan %.1f us, critical path %.1f us over %d ops (%.0f%% of the makespan)"
          % (args.trace, len(ops), makespan, cp_us, len(cp), 100.0 * cp_us / makespan if makespan else 0))
    for t in rows:
        if busy[t]:
            print("  %-28s busy %9.1f us  (%.0f%% of the makespan)" % (label[t], busy[t],
                                                                     100.0 * busy[t] / makespan if makespan else 0))
    if args.table:
        print("%-20s %7s %12s %7s %10s %10s %14s" % ("op type", "count", "total us", "share", "mean us",
                                                    "max us", "on crit. path"))
        for op, (count, tot, mx, on_cp) in table:
            print("%-20s %7d %12.1f %6.1f%% %10.2f %10.2f %14.1f" % (op, count, tot, 100.0 * tot / total,
                                                                   tot / count, mx, on_cp))

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        fail("matplotlib is not installed (apt-get install python3-matplotlib)")

    types = [op for op, _ in table]  # by total time: the biggest get the first colours
    cmap = plt.get_cmap("tab20" if len(types) > 10 else "tab10")
    colour = {op: cmap(i % cmap.N) for i, op in enumerate(types)}
    y = {t: i for i, t in enumerate(rows)}
    fig_h = 1.2 + 0.55 * len(rows)
    fig, ax = plt.subplots(figsize=(14, max(3.0, fig_h)))
    for ev in ops:
        on_cp = id(ev) in cp_ids
        ax.barh(y[ev["tid"]], ev["dur"], left=ev["ts"] - start, height=0.7, color=colour[ev["name"]],
                edgecolor="black" if on_cp else "none", linewidth=1.6 if on_cp else 0, zorder=3 if on_cp else 2)
    for ev in sched:
        idle = ev["name"] == "idle"
        ax.barh(y[ev["tid"]], ev["dur"], left=ev["ts"] - start, height=0.35 if idle else 0.7,
                color="#dddddd" if idle else "#555555", zorder=2)
    if len(cp) > 1:  # the path's hops, bar end to next bar start
        xs, ys = [], []
        for ev in cp:
            xs += [ev["ts"] - start, ev["ts"] - start + ev["dur"]]
            ys += [y[ev["tid"]], y[ev["tid"]]]
        ax.plot(xs, ys, color="black", linewidth=0.8, alpha=0.6, zorder=4)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([label[t] + ("\n%.0f%% busy" % (100.0 * busy[t] / makespan) if busy[t] and makespan else "")
                        for t in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max(makespan, end - start) * 1.01)
    ax.set_xlabel("time since the run started (us)")
    ax.grid(axis="x", alpha=0.3, zorder=0)
    title = args.title or "%s: %s, %s executor(s) x %s thread(s), makespan %.1f us, critical path %.1f us" % (
        other.get("source", args.trace), other.get("scheduler", "?"), other.get("executors", "?"),
        other.get("threads", "?"), makespan, cp_us)
    ax.set_title(title, fontsize=10)
    handles = [Patch(color=colour[op], label=op) for op in types]
    handles.append(Patch(facecolor="white", edgecolor="black", linewidth=1.6, label="critical path"))
    if any(ev["name"] != "idle" for ev in sched):
        handles.append(Patch(color="#555555", label="scheduler step / hand-off"))
    if any(ev["name"] == "idle" for ev in sched):
        handles.append(Patch(color="#dddddd", label="scheduler idle"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    try:
        fig.savefig(args.output, dpi=120)
    except OSError as e:
        fail("%s: cannot write (%s)" % (args.output, e.strerror))
    print("wrote " + args.output)


if __name__ == "__main__":
    main()
