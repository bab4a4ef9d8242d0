# presto_covered.awk - whether every event PRESTO's single_pulse_search.py
# reports is among spsearch's candidates (test/interop.bats, bench/sps).
#
#   cat *.singlepulse | awk -v dt=TSAMP -v step=DMSTEP [-v least=N] \
#       -f presto_covered.awk SPSEARCH.cand -
#
# PRESTO reports each series' events on its own (DM Sigma Time Sample
# Downfact); spsearch with --dm-tol 0 clusters within each series only, so
# its candidates (.cand: snr sample time log2width dm_index DM ...) are per
# series too. An event is found where a candidate lies within one DM step and,
# in time, within the wider of the two boxcars. Prints each event missed and a
# summary line; exits 1 where one was missed or fewer than least were reported.
NR == FNR { s[++n] = $1; t[n] = $3; w[n] = 2 ^ $4 * dt; d[n] = $6; next }
/^#/ { next }
{
    events++; hit = 0
    for (i = 1; i <= n && !hit; i++) {
        ww = $5 * dt > w[i] ? $5 * dt : w[i]
        if ((d[i] - $1)^2 <= step^2 * 1.0001 && (t[i] - $3)^2 <= ww^2) hit = i
    }
    if (!hit) { print "  missed:", $0; bad++ }
}
END {
    printf "PRESTO events: %d, found by spsearch: %d (DM step %s)\n", events, events - bad, step
    exit (bad > 0 || events < least)
}
