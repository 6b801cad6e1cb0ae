# NPBayesImputeCat's DPMPM (Manrique-Vallier & Reiter 2014) on NYexample: K = 80, one chain of
# 1,000 sweeps, missing cells imputed: the R column of the benchmarks table. Usage:
#   Rscript dpmpm.R NYexample_X.csv
suppressPackageStartupMessages(library(NPBayesImputeCat))
X <- read.csv(commandArgs(TRUE)[1])
X[] <- lapply(X, factor)
m <- CreateModel(X, NULL, 80, 0, 0.25, 0.25, seed = 1)
m$Run(0, 1000, 1, TRUE)
