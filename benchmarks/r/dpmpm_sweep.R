# NPBayesImputeCat's DPMPM sweep (Manrique-Vallier & Reiter 2014) for the per-sweep comparison of
# the benchmarks table: K = 40, 50 sweeps of warm-up, then SWEEPS sweeps timed (CPU seconds of
# the process, user + system); prints the CPU milliseconds a sweep. Usage:
#   Rscript dpmpm_sweep.R TABLE.csv SWEEPS
suppressPackageStartupMessages(library(NPBayesImputeCat))
a <- commandArgs(TRUE)
X <- read.csv(a[1], na.strings = c("", "NA"))
X[] <- lapply(X, factor)
m <- CreateModel(X, NULL, 40, 0, 0.25, 0.25, seed = 1)
m$Run(0, 50, 1, TRUE)
t0 <- proc.time()
m$Run(0, as.integer(a[2]), 1, TRUE)
t <- proc.time() - t0
cat(sprintf("%.4f\n", 1e3 * (t[["user.self"]] + t[["sys.self"]]) / as.integer(a[2])))
