# synthpop 1.9-2's per-table utility (utility.tables, utility.tab) and compare() on a release of
# CEdata's first 1000 records, for tests/utility/test_tables.py.
#
# Run from the repository root (R 4.2.2, synthpop 1.9-2):
#   Rscript tests/utility/synthpop_tables_reference/make_reference.R ../shared/data
# The release: syn(CEdata[1:1000, ], m = 3, seed = 9), synthpop's defaults (every column by
# cart but the first visited, by sample), Urban, Marital and Tenure factors.
suppressMessages(library(synthpop))
args <- commandArgs(trailingOnly = TRUE)
data_dir <- if (length(args)) args[1] else "../shared/data"
out <- "tests/utility/synthpop_tables_reference"

CEdata <- read.csv(file.path(data_dir, "CEdata.csv"))[1:1000, ]
for (v in c("Urban", "Marital", "Tenure")) CEdata[[v]] <- as.factor(CEdata[[v]])
s <- syn(CEdata, m = 3, seed = 9, print.flag = FALSE)
rel <- do.call(rbind, lapply(seq_along(s$syn), function(j) data.frame(dataset = j, s$syn[[j]])))
for (v in c("Urban", "Marital", "Tenure")) rel[[v]] <- as.integer(as.character(rel[[v]]))
write.csv(rel, gzfile(file.path(out, "release.csv.gz")), row.names = FALSE)

# every one-, two- and three-way table, every statistic (means over the m datasets)
stats <- c("VW", "FT", "JSD", "U", "pMSE", "S_pMSE", "S_FT", "S_JSD", "df")
tabs <- do.call(rbind, lapply(c("oneway", "twoway", "threeway"), function(k) {
  u <- utility.tables(s, CEdata, tables = k, tab.stats = stats, plot = FALSE,
                      print.flag = FALSE)
  data.frame(table = rownames(u$tabs), u$tabs, check.names = FALSE)
}))
write.csv(tabs, file.path(out, "utility_tables.csv"), row.names = FALSE)

# one table per dataset (utility.tab keeps each dataset's figures)
per <- do.call(rbind, lapply(list(c("Age", "Income"), c("Tenure", "Marital", "Educ")), function(v) {
  u <- utility.tab(s, CEdata, vars = v, print.flag = FALSE)
  data.frame(table = paste(v, collapse = ":"), dataset = seq_len(s$m),
             u[c("VW", "FT", "JSD", "U", "pMSE", "S_pMSE", "df")])
}))
write.csv(per, file.path(out, "utility_tab_per_dataset.csv"), row.names = FALSE)

# compare(): each variable's percentages, original and the pooled release, and its utility
cmp <- compare(s, CEdata, utility.stats = c("pMSE", "S_pMSE", "df"), print.flag = FALSE,
               nrow = 4, ncol = 2)
marg <- do.call(rbind, lapply(names(cmp$tables), function(v) {
  t <- cmp$tables[[v]]
  data.frame(variable = v, value = colnames(t), observed = t["observed", ],
             synthetic = t["synthetic", ], row.names = NULL)
}))
write.csv(marg, file.path(out, "compare_marginals.csv"), row.names = FALSE)
write.csv(data.frame(variable = rownames(cmp$tab.utility), cmp$tab.utility),
          file.path(out, "compare_utility.csv"), row.names = FALSE)
