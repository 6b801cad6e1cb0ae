# Reference outputs of sdcMicro for tests/disclosure/test_original_risk_reference.py.
#
# Run from the repository root with sdcMicro installed (see README.md beside this file):
#   Rscript tests/disclosure/sdcmicro_reference/make_reference.R ../shared/data
# Writes the files of this folder. Every call is printed in README.md.
suppressMessages({
  library(sdcMicro)
  library(jsonlite)
})
args <- commandArgs(trailingOnly = TRUE)
data_dir <- if (length(args)) args[1] else "../shared/data"
out <- "tests/disclosure/sdcmicro_reference"
wr <- function(x, f) {
  write.csv(x, gzfile(file.path(out, f)), row.names = FALSE, na = "")
}
num <- function(x) signif(x, 15)

# ---- the weights the tests give the shared data (neither file has survey weights) ---------
toy_weights <- function(n) 100 + 37 * ((seq_len(n) - 1) %% 11)

# print.measure_risk's "obs. with higher risk as the main part"
n_high <- function(r) sum(r > median(r) + 3 * mad(r) & r > 0.1)

one <- function(name, d, keys, sensitive, w = NULL) {
  res <- list()
  # individual risk and global risk (measure_risk: freqCalc + indivRisk, approximation)
  m0 <- measure_risk(d, keyVars = keys)
  res$unweighted <- list(global_risk_ER = m0$global_risk_ER, global_risk = m0$global_risk,
                         global_risk_pct = m0$global_risk_pct, n_high = n_high(m0$Res[, 1]))
  rec <- data.frame(fk = m0$Res[, "fk"], risk = num(m0$Res[, "risk"]))
  if (!is.null(w)) {
    dw <- d
    dw$w <- w
    m1 <- measure_risk(dw, keyVars = keys, w = "w")
    res$weighted <- list(global_risk_ER = m1$global_risk_ER, global_risk = m1$global_risk,
                         global_risk_pct = m1$global_risk_pct, n_high = n_high(m1$Res[, 1]))
    rec$Fk_w <- num(m1$Res[, "Fk"])
    rec$risk_w <- num(m1$Res[, "risk"])
    stopifnot(all(m1$Res[, "fk"] == m0$Res[, "fk"]))
  }
  # k-anonymity: records with fk < k (sdcMicro's print(sdc, "kAnon") counts)
  res$kanon <- sapply(c(2, 3, 5), function(k) sum(m0$Res[, "fk"] < k))
  names(res$kanon) <- c("2", "3", "5")
  # SUDA2 (Elliot et al. scores, DisFraction 0.01)
  s <- suda2(d, variables = keys)
  rec$suda_score <- num(s$score)
  rec$dis_suda_score <- num(s$disScore)
  cp <- as.data.frame(s$contributionPercent)
  names(cp) <- paste0(keys, "_contribution")
  rec <- cbind(rec, as.data.frame(lapply(cp, num)))
  res$suda_attribute_contributions <- setNames(as.list(s$attribute_contributions$contribution),
                                               s$attribute_contributions$variable)
  lev <- s$attribute_level_contributions
  lev$attribute <- as.character(lev$attribute)
  lev$contribution <- num(lev$contribution)
  write.csv(lev, file.path(out, paste0(name, "_suda_levels.csv")), row.names = FALSE)
  # l-diversity of the keys for each sensitive column
  for (sv in sensitive) {
    l <- ldiversity(d, keyVars = keys, ldiv_index = sv)
    rec[[paste0(sv, "_Distinct_Ldiversity")]] <- l[, 1]
    rec[[paste0(sv, "_Entropy_Ldiversity")]] <- num(l[, 2])
    rec[[paste0(sv, "_Recursive_Ldiversity")]] <- l[, 3]
  }
  wr(rec, paste0(name, "_records.csv.gz"))
  res
}

summary <- list(
  sdcMicro = as.character(packageVersion("sdcMicro")),
  R = R.version.string
)

# ---- francdat (sdcMicro's data; Capobianchi, Polettini and Lucarelli's example) -------------
data(francdat)
f <- freqCalc(francdat, keyVars = c(2, 4, 5, 6), w = 8)
fr <- data.frame(fk = f$fk, Fk = f$Fk,
                 risk_approx = num(indivRisk(f)$rk),
                 risk_exact = num(indivRisk(f, method = "exact")$rk))
s <- suda2(francdat, variables = c("Key1", "Key2", "Key3", "Key4"))
fr$suda_score <- s$score
fr$dis_suda_score <- num(s$disScore)
cp <- as.data.frame(s$contributionPercent)
names(cp) <- paste0(c("Key1", "Key2", "Key3", "Key4"), "_contribution")
fr <- cbind(fr, cp)
l <- ldiversity(francdat, keyVars = c("Key1", "Key2", "Key3", "Key4"), ldiv_index = "Num3")
fr$Num3_Distinct_Ldiversity <- l[, 1]
fr$Num3_Entropy_Ldiversity <- num(l[, 2])
fr$Num3_Recursive_Ldiversity <- l[, 3]
write.csv(fr, file.path(out, "francdat_records.csv"), row.names = FALSE)
m <- measure_risk(francdat, keyVars = c(2, 4, 5, 6), w = 8)
summary$francdat <- list(global_risk_ER = m$global_risk_ER, global_risk = m$global_risk,
                         global_risk_pct = m$global_risk_pct,
                         suda_attribute_contributions = setNames(
                           as.list(s$attribute_contributions$contribution),
                           s$attribute_contributions$variable))

# ---- indivRisk's exact and approximate risk on cells of 1 to 8 records ----------------------
# (a freqCalc object made by hand: sample frequency fk and weighted frequency Fk per record)
grid <- expand.grid(fk = 1:8, Fk_over_fk = c(1, 1.001, 1.5, 2, 5, 20, 100))
grid$Fk <- grid$fk * grid$Fk_over_fk
fc <- list(freqCalc = data.frame(x = seq_len(nrow(grid))), keyVars = 1, w = 2,
           fk = grid$fk, Fk = grid$Fk)
grid$risk_approx <- num(indivRisk(fc)$rk)
grid$risk_exact <- num(indivRisk(fc, method = "exact")$rk)
write.csv(grid[, c("fk", "Fk", "risk_approx", "risk_exact")], file.path(out, "indivrisk_grid.csv"),
          row.names = FALSE)

# ---- CEdata, keys Age, Urban, Marital --------------------------------------------------------
ce <- read.csv(file.path(data_dir, "CEdata.csv"))
summary$CEdata <- one("CEdata", ce, c("Age", "Urban", "Marital"), c("Tenure", "Income"),
                      w = toy_weights(nrow(ce)))

# ---- SD2011, keys sex, agegr, placesize, region, edu, marital (some missing) ----------------
meta <- fromJSON(file.path(data_dir, "datasets.json"), simplifyVector = FALSE)$SD2011
sd <- read.csv(file.path(data_dir, "SD2011.csv"), na.strings = "", stringsAsFactors = FALSE)
for (col in meta$columns) {
  if (length(col$levels)) sd[[col$name]] <- factor(sd[[col$name]], levels = unlist(col$levels))
}
sd_keys <- c("sex", "agegr", "placesize", "region", "edu", "marital")
summary$SD2011 <- one("SD2011", sd, sd_keys, c("depress"), w = toy_weights(nrow(sd)))
# the same keys without the records that miss one (sdcMicro's missing-key rule does not apply)
cc <- sd[complete.cases(sd[, sd_keys]), ]
summary$SD2011_complete <- one("SD2011_complete", cc, sd_keys, c("depress"),
                               w = toy_weights(nrow(cc)))

writeLines(toJSON(summary, auto_unbox = TRUE, digits = NA, pretty = TRUE),
           file.path(out, "summary.json"))
