# IdentificationRiskCalculation's IdentificationRisk() on the README's scenario 4 (Hornby & Hu
# 2021): the R column of the benchmarks table. Usage:
#   Rscript identification.R ORIGINAL.csv SYN_1.csv ... SYN_m.csv
suppressPackageStartupMessages(library(IdentificationRiskCalculation))
a <- commandArgs(TRUE)
rd <- function(p) read.csv(p, colClasses = c(Urban = "factor", Marital = "factor", Tenure = "factor"))
r <- IdentificationRisk(rd(a[1]), lapply(a[-1], rd), known = c("Age", "Urban", "Marital"),
                        syn = c("Tenure", "Expenditure", "Income"), r = c(0.1, 0.1, 0.1),
                        percentage = TRUE)
