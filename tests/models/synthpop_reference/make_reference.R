# synthpop's releases of Hornby & Hu's (2021) scenarios (2) and (4) for
# tests/models/test_synthesis_spec.py (scenarios (1) and (3) are in the shared reference data).
#
# Run from the repository root (R 4.2.2, synthpop 1.9-2):
#   Rscript tests/models/synthpop_reference/make_reference.R ../shared/data
# The calls are the paper's (Section 4): CEdata with Urban, Marital, Tenure as factors and
# syn(CEdata, m = 20, visit.sequence = synvars), synthpop's defaults otherwise; the seed is fixed.
# Only the synthesized columns are written (the others are CEdata's, copied): one row per record
# and dataset, `dataset` = 1..20, records in CEdata's order.
suppressMessages(library(synthpop))
args <- commandArgs(trailingOnly = TRUE)
data_dir <- if (length(args)) args[1] else "../shared/data"
out <- "tests/models/synthpop_reference"

CEdata <- read.csv(file.path(data_dir, "CEdata.csv"))
CEdata$Urban <- as.factor(CEdata$Urban)
CEdata$Marital <- as.factor(CEdata$Marital)
CEdata$Tenure <- as.factor(CEdata$Tenure)

scenarios <- list(`2` = c("Tenure", "Income"), `4` = c("Tenure", "Expenditure", "Income"))
for (k in names(scenarios)) {
  synvars <- scenarios[[k]]
  s <- syn(CEdata, m = 20, visit.sequence = synvars, seed = 2021 + as.integer(k),
           print.flag = FALSE)
  stopifnot(identical(unname(s$method[synvars]), c("sample", rep("cart", length(synvars) - 1))))
  rel <- do.call(rbind, lapply(seq_along(s$syn), function(j) {
    d <- s$syn[[j]]
    # every unvisited column is CEdata's, unchanged
    stopifnot(isTRUE(all.equal(d[setdiff(names(CEdata), synvars)],
                               CEdata[setdiff(names(CEdata), synvars)])))
    data.frame(dataset = j, d[synvars])
  }))
  rel$Tenure <- as.integer(as.character(rel$Tenure))
  write.csv(rel, gzfile(file.path(out, sprintf("scenario%s.csv.gz", k))), row.names = FALSE)
}
