#!/usr/bin/env python3
"""bench_report.py - the tables of scripts/bench.sh from its raw file.

Raw lines (one per measurement, written as the rounds ran):
  P <round> <pingpong_ns> <lines_ns>          the cache-line probe at the round's start
  R <round> <config> <bench> <bytes> <value>  a result (us for latencies, MB/s for bandwidths)

For each benchmark and size: btl tca's median over the rounds, the reference
of each round (the best of the reference configurations in that same round),
and tca's ratio to it: the median of the per-round ratios and the worst
round's.  Rounds are grouped by the probe: a round whose cache-line ping-pong
took more than SLOW_FACTOR times the run's fastest is a "slow" round (line
transfers between the two cores were dear then); each group gets its ratios.
--pair A:B adds the ratio A/B per size (the in-tree build against the
out-of-tree one of the same commit); --pair A:B:BAR also judges it, on the
median of the per-round ratios: A/B <= BAR where lower is better, >= 1/BAR
where higher is (met or MISSED, counted apart from the goals against the
references).
"""
import argparse
import statistics
import sys
from collections import defaultdict

SLOW_FACTOR = 1.25
LOWER_IS_BETTER = {"latency", "plat", "put_lat", "get_lat", "acc_lat", "fop_lat", "cas_lat"}
# One-sided benchmarks (scripts/bench-rma.sh): their goals are judged on the median.
RMA = {"put_lat", "get_lat", "put_bw", "get_bw", "acc_lat", "fop_lat", "cas_lat"}
TITLES = {
    "latency": "one-way latency (ping-pong / 2), us, lower is better",
    "plat": "persistent one-way latency (Send_init/Recv_init + Start), us, lower is better",
    "bw": "bandwidth, window of 64, each message from its own slice of a large buffer (cold), "
          "MB/s, higher is better",
    "bibw": "bidirectional bandwidth, window of 64 each way, cold slices, MB/s, higher is better",
    "bw_one": "bandwidth, window of 64 from one buffer into one buffer (osu_bw, osu_mbw_mr), "
              "MB/s, higher is better",
    "bibw_one": "bidirectional bandwidth, one buffer per side (osu_bibw), MB/s, higher is better",
    "overlap": "receiver-side overlap (Irecv, compute, Wait), percent, higher is better",
    "put_lat": "MPI_Put + MPI_Win_flush latency, us, lower is better",
    "get_lat": "MPI_Get + MPI_Win_flush latency, us, lower is better",
    "put_bw": "MPI_Put bandwidth, 64 per flush, MB/s, higher is better",
    "get_bw": "MPI_Get bandwidth, 64 per flush, MB/s, higher is better",
    "acc_lat": "MPI_Accumulate (MPI_SUM, MPI_INT) + flush latency, us, lower is better",
    "fop_lat": "MPI_Fetch_and_op (MPI_SUM, MPI_LONG) + flush latency, us, lower is better",
    "cas_lat": "MPI_Compare_and_swap (MPI_LONG) + flush latency, us, lower is better",
}


# Buffer shapes measured apart: a size meets a bandwidth goal only in both.
SHAPES = (("bw", "bw_one"), ("bibw", "bibw_one"))


def goal(bench, size):
    """The bars (tca / the same round's reference): (op, median's bar, the
    worst round's bar or None)."""
    del size  # every size alike
    if bench == "latency":
        return ("<=", 1.0, 1.2)
    if bench == "plat":
        return ("<=", 1.0, None)
    if bench in ("bw", "bibw", "bw_one", "bibw_one"):
        return (">=", 1.0, 0.8)
    if bench in ("put_bw", "get_bw"):
        return (">=", 1.0, None)
    if bench in ("put_lat", "get_lat", "fop_lat", "cas_lat"):
        return ("<=", 1.0, None)
    return None


def meets(op, value, bar):
    return value <= bar if op == "<=" else value >= bar


def fmt(v):
    if v is None:
        return "-"
    return f"{v:.3f}" if v < 100 else f"{v:.0f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("--tca", default="tca", help="the configuration judged")
    ap.add_argument("--refs", default="vader,vader-nocopy,ucx", help="reference configurations")
    ap.add_argument("--show", default="", help="more configurations to list (medians)")
    ap.add_argument("--pair", action="append", default=[],
                    help="A:B, the ratio A/B per size; A:B:BAR judges it (A within BAR x B)")
    ap.add_argument("--benches", default="latency,plat,bw,bw_one,bibw,bibw_one")
    args = ap.parse_args()
    refs = [r for r in args.refs.split(",") if r]
    shown = [c for c in args.show.split(",") if c]

    val = defaultdict(dict)  # (cfg, bench, size) -> {round: value}
    probe = {}
    for line in open(args.raw):
        f = line.split()
        if not f:
            continue
        if f[0] == "P" and len(f) >= 4:
            probe[int(f[1])] = (float(f[2]), float(f[3]))
        elif f[0] == "R" and len(f) >= 6:
            val[(f[2], f[3], int(f[4]))][int(f[1])] = float(f[5])
    rounds = sorted({r for d in val.values() for r in d})
    if not rounds:
        print("no results in", args.raw)
        return 1

    fastest = min((p[0] for p in probe.values()), default=None)
    mode = {}
    for r in rounds:
        if r in probe and fastest:
            mode[r] = "slow" if probe[r][0] > SLOW_FACTOR * fastest else "fast"
        else:
            mode[r] = "fast"
    groups = {"all": rounds}
    for m in ("fast", "slow"):
        rs = [r for r in rounds if mode[r] == m]
        if rs and len(rs) < len(rounds):
            groups[m] = rs
    print(f"rounds: {len(rounds)}; cache-line probe (ping-pong round trip between the ranks' cores, ns):")
    for m in ("fast", "slow"):
        rs = [r for r in rounds if mode[r] == m and r in probe]
        if rs:
            pp = [probe[r][0] for r in rs]
            ln = [probe[r][1] for r in rs]
            print(f"  {m}: {len(rs)} rounds ({' '.join(str(r) for r in rs)}), ping-pong "
                  f"{min(pp):.0f}-{max(pp):.0f}, per line copied {min(ln):.1f}-{max(ln):.1f}")
    print(f"  (slow: over {SLOW_FACTOR}x the run's fastest ping-pong)")

    met = missed = 0
    judged = {}  # (bench, size) -> (median ratio, worst round's)
    pair_verdicts = defaultdict(lambda: [0, 0])  # pair -> [met, missed]
    for bench in args.benches.split(","):
        sizes = sorted({k[2] for k in val if k[1] == bench})
        if not sizes:
            continue
        lo = bench in LOWER_IS_BETTER
        best_of = min if lo else max
        worst_of = max if lo else min
        print(f"\n{TITLES.get(bench, bench)}")
        head = f"{'bytes':>8} {args.tca:>9}"
        for c in shown:
            head += f" {c:>12}"
        head += f" {'ref':>9} {'(median of)':>13} {'ratio':>6} {'worst':>6} {'goal':>12}"
        for g in groups:
            if g != "all":
                head += f" {g + ' ratio/worst':>18}"
        print(head)
        for size in sizes:
            tca = val.get((args.tca, bench, size), {})
            per_round = {}  # round -> (ratio, ref name)
            for r in rounds:
                cand = [(val[(c, bench, size)][r], c) for c in refs
                        if r in val.get((c, bench, size), {})]
                if r in tca and cand:
                    ref_v, ref_c = best_of(cand)
                    if ref_v > 0:
                        per_round[r] = (tca[r] / ref_v, ref_c)
            line = f"{size:>8} {fmt(statistics.median(tca.values()) if tca else None):>9}"
            for c in shown:
                d = val.get((c, bench, size), {})
                line += f" {fmt(statistics.median(d.values()) if d else None):>12}"
            ref_meds = {c: statistics.median(val[(c, bench, size)].values())
                        for c in refs if val.get((c, bench, size))}
            if ref_meds:
                rc = best_of(ref_meds, key=ref_meds.get)
                line += f" {fmt(ref_meds[rc]):>9} {rc:>13}"
            else:
                line += f" {'-':>9} {'':>13}"
            ratios = [per_round[r][0] for r in rounds if r in per_round]
            if ratios:
                med, worst = statistics.median(ratios), worst_of(ratios)
                line += f" {med:6.2f} {worst:6.2f}"
                g = goal(bench, size)
                if g:
                    op, bar, worst_bar = g
                    ok = meets(op, med, bar) and (worst_bar is None or meets(op, worst, worst_bar))
                    met += ok
                    missed += not ok
                    judged[(bench, size)] = (med, worst)
                    bars = op + format(bar, ".1f") + ("" if worst_bar is None else "/" + format(worst_bar, ".1f"))
                    line += f" {bars:>6} {'met' if ok else 'MISSED':>5}"
                else:
                    line += f" {'-':>12}"
            else:
                line += f" {'-':>6} {'-':>6} {'-':>12}"
            for gname, rs in groups.items():
                if gname == "all":
                    continue
                rr = [per_round[r][0] for r in rs if r in per_round]
                line += f" {(f'{statistics.median(rr):.2f}/{worst_of(rr):.2f}' if rr else '-'):>18}"
            print(line)
        for pair in args.pair:
            a, b, *bar = pair.split(":")
            bar = float(bar[0]) if bar else None
            rows = []
            for size in sizes:
                da, db = val.get((a, bench, size), {}), val.get((b, bench, size), {})
                rr = [da[r] / db[r] for r in rounds if r in da and r in db and db[r] > 0]
                if rr:
                    m = statistics.median(rr)
                    verdict = ""
                    if bar is not None:
                        ok = m <= bar if lo else m >= 1 / bar
                        pair_verdicts[pair][0 if ok else 1] += 1
                        verdict = " met" if ok else " MISSED"
                    rows.append((size, m, worst_of(rr), verdict))
            if rows:
                goal_text = f", goal {'<=' if lo else '>='} {bar if lo else 1 / bar:.2f}" if bar else ""
                print(f"  {a} / {b} (same round{goal_text}): " + ", ".join(
                    f"{s} {m:.2f} (worst {w:.2f}){v}" for s, m, w, v in rows))
    for a, b in SHAPES:
        sizes = sorted({k[1] for k in judged if k[0] in (a, b)})
        rows = []
        for size in sizes:
            both = [judged[(x, size)] for x in (a, b) if (x, size) in judged]
            if len(both) == 2:
                rows.append(f"{size} {min(m for m, _ in both):.2f}/{min(w for _, w in both):.2f}")
        if rows:
            print(f"\n{a} and {b}, the worse of the two buffer shapes (ratio median/worst round): "
                  + ", ".join(rows))
    print(f"\ngoals (median, and where a bar is given the worst round): {met} met, {missed} missed")
    for pair, (pm, px) in pair_verdicts.items():
        a, b, bar = pair.split(":")
        print(f"pair goals ({a} within {bar}x {b}, median of the per-round ratios): {pm} met, {px} missed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
