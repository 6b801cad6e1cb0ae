# synthpop syn() objects saved by R, for tests/data/test_synthpop_rds.py.
# Run from the repository root (R 4.2.2, synthpop 1.9-2):
#   Rscript tests/data/synthpop_rds/make_fixture.R ../shared/data
# The original is CEdata's first 300 records (written beside, as original.csv), Urban, Marital
# and Tenure factors; Tenure, Marital and Income synthesized (Tenure by sample as synthpop draws
# the first visited column, Marital by cart, Income by normrank), m = 2, seed 7.
suppressMessages(library(synthpop))
args <- commandArgs(trailingOnly = TRUE)
data_dir <- if (length(args)) args[1] else "../shared/data"
out <- "tests/data/synthpop_rds"
CEdata <- read.csv(file.path(data_dir, "CEdata.csv"))[1:300, ]
write.csv(CEdata, file.path(out, "original.csv"), row.names = FALSE)
for (v in c("Urban", "Marital", "Tenure")) CEdata[[v]] <- as.factor(CEdata[[v]])
s <- syn(CEdata, method = c(Age = "", Urban = "", Tenure = "cart", Educ = "", Expenditure = "",
                            Marital = "cart", Income = "normrank"),
         visit.sequence = c("Tenure", "Marital", "Income"), m = 2, seed = 7, print.flag = FALSE)
saveRDS(s, file.path(out, "syn.rds"))
# an .RData file with the syn() object beside another object
other <- data.frame(x = 1:3)
save(s, other, file = file.path(out, "syn.RData"))
# every column synthesized, one dataset (syn is then a data frame, not a list)
s1 <- syn(CEdata, m = 1, seed = 8, print.flag = FALSE)
saveRDS(s1, file.path(out, "syn_m1.rds"))
# not a synthpop object
saveRDS(CEdata, file.path(out, "data_frame.rds"))
# the first dataset's values, to check the reader
write.csv(s$syn[[1]], file.path(out, "syn1.csv"), row.names = FALSE)
