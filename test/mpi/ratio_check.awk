# ratio_check.awk - the reference transport bounds btl tca: input lines
# "CONFIG WHERE BENCH BYTES VALUE" (CONFIG ref or tca, several runs of each;
# WHERE says how the ranks were placed, e.g. np4 or 4x1),
# the better value of each kept (pairs: bandwidth, higher is better; others
# time).  Every (where, bench, size) must have tca within limit x the reference
# (plus slack microseconds for times).  Variables: limit, slack, ref_name.
# The tests use it for collapses only (limit 10: many_in_flight.sh,
# test/multihost/run.sh); how close tca comes is scripts/bench-coll.sh's.
# Prints one line per size; exits 1 on a miss or a missing configuration.
{
    k = $2 " " $3 " " $4
    if (!(($1, k) in v)) v[$1, k] = $5  # (tested first: reading v[$1, k] would create it)
    else if ($3 == "pairs" ? $5 > v[$1, k] : $5 < v[$1, k]) v[$1, k] = $5
    keys[k] = 1
}
END {
    bad = 0
    for (k in keys) {
        split(k, f, " ")
        if (!(("ref", k) in v) || !(("tca", k) in v)) {
            printf "FAIL %s %s %s B: a configuration gave no result\n", f[1], f[2], f[3]
            bad = 1
            continue
        }
        r = v["ref", k]; t = v["tca", k]
        if (f[2] == "pairs") { ok = t * limit >= r; unit = "MB/s" }
        else { ok = t <= limit * r + slack; unit = "us" }
        printf "%s %s %-9s %8d B: tca %10.1f %s, %s %10.1f %s (%.2fx)\n", ok ? "ok  " : "FAIL", f[1], f[2], f[3],
               t, unit, ref_name, r, unit, t / r
        if (!ok) bad = 1
    }
    exit bad
}
