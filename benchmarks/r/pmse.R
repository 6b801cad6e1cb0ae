# synthpop's utility.gen(): pMSE of a logit propensity model with main effects only: the R column
# of the benchmarks table. Usage:
#   Rscript pmse.R ORIGINAL.csv SYN_1.csv ... SYN_m.csv
suppressPackageStartupMessages(library(synthpop))
a <- commandArgs(TRUE)
rd <- function(p) read.csv(p, colClasses = c(Urban = "factor", Marital = "factor", Tenure = "factor"))
u <- utility.gen(lapply(a[-1], rd), rd(a[1]), method = "logit", maxorder = 0, print.flag = FALSE)
