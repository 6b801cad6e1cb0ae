# Reference outputs of sdcMicro's remedies for tests/disclosure/test_sdcmicro_remedies.py.
#
# Run from the repository root with sdcMicro installed (see README.md beside this file):
#   Rscript tests/disclosure/sdcmicro_remedies_reference/make_reference.R ../shared/data
# Writes the files of this folder. Every call is listed in README.md.
suppressMessages({
  library(sdcMicro)
  library(jsonlite)
})
args <- commandArgs(trailingOnly = TRUE)
data_dir <- if (length(args)) args[1] else "../shared/data"
out <- "tests/disclosure/sdcmicro_remedies_reference"
# every double with 17 significant digits: the file reads back to the same double
exact <- function(d) {
  for (n in names(d)) if (is.double(d[[n]])) d[[n]] <- sprintf("%.17g", d[[n]])
  d
}
wr <- function(x, f) {
  con <- gzfile(file.path(out, f), "w")
  write.csv(exact(x), con, row.names = FALSE, na = "", quote = FALSE)
  close(con)
}

ce <- read.csv(file.path(data_dir, "CEdata.csv"))
meta <- fromJSON(file.path(data_dir, "datasets.json"), simplifyVector = FALSE)$SD2011
sd <- read.csv(file.path(data_dir, "SD2011.csv"), na.strings = "", stringsAsFactors = FALSE)
for (col in meta$columns) {
  if (length(col$levels)) sd[[col$name]] <- factor(sd[[col$name]], levels = unlist(col$levels))
}
summary <- list(sdcMicro = as.character(packageVersion("sdcMicro")), R = R.version.string)

# ---- microaggregation(method = "mdav"): the aggregated values, record by record -------------
micro <- function(d, vars, aggr, strata = NULL) {
  m <- microaggregation(d, variables = vars, aggr = aggr, method = "mdav",
                        strata_variables = strata)$mx
  m[, vars, drop = FALSE]  # one variable: mafast's result holds every column of d
}
# (the smaller cases on the first 2,000 records, which keeps the tests quick)
wr(micro(ce, c("Expenditure", "Income"), 3), "mdav_CEdata_k3.csv.gz")
wr(micro(head(ce, 2000), c("Age", "Expenditure", "Income"), 5), "mdav_CEdata_age_k5.csv.gz")
wr(micro(ce, "Income", 3), "mdav_CEdata_income_k3.csv.gz")  # one variable: mafast
wr(micro(head(ce, 2000), c("Expenditure", "Income"), 3, strata = "Urban"),
   "mdav_CEdata_urban_k3.csv.gz")
wr(micro(head(sd, 2000), c("income", "height", "weight"), 3), "mdav_SD2011_k3.csv.gz")  # NA
# two records equally far from the first in single precision (not in double): sdcMicro's
# float distances tie, and its hash sort puts the later record first
ties <- data.frame(a = c(0, 1000, 1000.00001, 1000.5, 0, 1000, 1000.01, 1000.5),
                   b = 0, set = rep(1:2, each = 4))
ties$mx_a <- unlist(lapply(split(ties, ties$set), function(t) micro(t, c("a", "b"), 2)$a))
wr(ties, "mdav_ties.csv.gz")

# ---- localSuppression: which key values are suppressed, record by record --------------------
supp <- function(d, keys, k, importance = NULL, strata = NULL) {
  r <- localSuppression(d, keyVars = keys, k = k, importance = importance,
                        strataVars = strata)
  x <- r$xAnon
  flags <- as.data.frame(lapply(keys, function(v) as.integer(is.na(x[[v]]) & !is.na(d[[v]]))))
  names(flags) <- keys
  list(flags = flags, importance = r$importance, supps = unlist(r$supps[nrow(r$supps), ]))
}
ls_cases <- list(
  list(name = "ls_CEdata_4keys_k3", d = ce, keys = c("Urban", "Tenure", "Marital", "Educ"), k = 3),
  list(name = "ls_CEdata_age_k2", d = ce, keys = c("Age", "Urban", "Marital"), k = 2),
  list(name = "ls_CEdata_importance_k5", d = ce, keys = c("Urban", "Tenure", "Marital", "Educ"),
       k = 5, importance = c(4, 1, 3, 2)),
  list(name = "ls_CEdata_strata_k3", d = ce, keys = c("Tenure", "Marital", "Educ"), k = 3,
       strata = "Urban"),
  list(name = "ls_SD2011_k3", d = sd,
       keys = c("sex", "agegr", "placesize", "region", "edu", "marital"), k = 3)
)
summary$local_suppression <- list()
for (cs in ls_cases) {
  r <- supp(cs$d, cs$keys, cs$k, cs$importance, cs$strata)
  wr(r$flags, paste0(cs$name, ".csv.gz"))
  summary$local_suppression[[cs$name]] <- list(importance = r$importance,
                                               suppressions = as.list(r$supps))
}

# ---- pram: the invariant transition matrix from its drawn diagonal (deterministic) ----------
# The first random draws of pram() on a data frame are runif(L, pd, 1), the diagonal of P;
# drawn again here with the same seed, they give pram()'s matrix Rs by its formula.
ce_f <- ce
for (v in c("Tenure", "Educ", "Marital")) ce_f[[v]] <- factor(ce_f[[v]])
summary$pram_matrices <- list()
for (v in c("Tenure", "Educ")) {
  for (s in 1:3) {
    for (pa in list(c(0.8, 0.5), c(0.6, 0.9))) {
      L <- nlevels(ce_f[[v]])
      set.seed(s)
      pds <- runif(L, pa[1], 1)
      set.seed(s)
      r <- pram(ce_f, variables = v, pd = pa[1], alpha = pa[2])
      Rs <- attr(r, "pram_params")[[v]]$Rs
      summary$pram_matrices[[length(summary$pram_matrices) + 1]] <- list(
        variable = v, seed = s, pd = pa[1], alpha = pa[2], levels = levels(ce_f[[v]]),
        counts = as.vector(table(ce_f[[v]])), pds = pds, Rs = unname(Rs),
        changes = sum(as.character(r[[v]]) != as.character(r[[paste0(v, "_pram")]])))
    }
  }
}

# ---- pram over many seeds: the matrix's mean and the realised transitions --------------------
n_rep <- 400
mc <- list()
for (v in c("Tenure", "Educ")) {
  L <- nlevels(ce_f[[v]])
  Rsum <- matrix(0, L, L)
  Rsq <- matrix(0, L, L)
  trans <- matrix(0, L, L)
  changes <- numeric(n_rep)
  for (s in seq_len(n_rep)) {
    set.seed(1000 + s)
    r <- pram(ce_f, variables = v)
    Rs <- attr(r, "pram_params")[[v]]$Rs
    Rsum <- Rsum + Rs
    Rsq <- Rsq + Rs^2
    trans <- trans + unclass(table(r[[v]], r[[paste0(v, "_pram")]]))
    changes[s] <- attr(r, "summary")$nrChanges
  }
  mc[[v]] <- list(n_rep = n_rep, levels = levels(ce_f[[v]]), Rs_mean = unname(Rsum / n_rep),
                  Rs_sd = unname(sqrt(pmax(Rsq / n_rep - (Rsum / n_rep)^2, 0))),
                  transitions = unname(trans), changes_mean = mean(changes),
                  changes_sd = sd(changes))
}
summary$pram_monte_carlo <- mc

# ---- addNoise: the variance (additive) and covariance (correlated) of the noise -------------
x <- ce[, c("Expenditure", "Income")]
noise_var <- matrix(NA, n_rep, 2)
noise_cov <- matrix(NA, n_rep, 3)
for (s in seq_len(n_rep)) {
  set.seed(2000 + s)
  e <- addNoise(x, noise = 150, method = "additive")$xm - as.matrix(x)
  noise_var[s, ] <- apply(e, 2, var)
  set.seed(3000 + s)
  e <- addNoise(x, noise = 150, method = "correlated")$xm - as.matrix(x)
  cv <- cov(e)
  noise_cov[s, ] <- c(cv[1, 1], cv[1, 2], cv[2, 2])
}
summary$add_noise <- list(
  n_rep = n_rep, columns = names(x),
  additive = list(noise = 150, var_mean = colMeans(noise_var),
                  var_sd = apply(noise_var, 2, sd), x_sd = unname(apply(x, 2, sd))),
  correlated = list(noise = 150, cov_mean = colMeans(noise_cov),
                    cov_sd = apply(noise_cov, 2, sd),
                    x_cov = c(cov(x)[1, 1], cov(x)[1, 2], cov(x)[2, 2])))

writeLines(toJSON(summary, auto_unbox = TRUE, digits = NA, pretty = TRUE),
           file.path(out, "summary.json"))
