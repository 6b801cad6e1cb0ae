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

# The regression methods on a copy of CEdata with missing values (synthpop's padMis.syn,
# padModel.syn): Expenditure empty in every 17th record (i %% 17 == 3, i = 0-based row) and -1,
# a declared missing-value code (cont.na), in every 29th (i %% 29 == 7) of the others; Marital
# empty in every 23rd (i %% 23 == 5). The fitted models (models = TRUE) go to missing_fits.json:
# norm's beta and sigma, logreg's coefficients, multinom's coefficient matrices (rows: the
# levels after the first), each with R's names.
suppressMessages(library(jsonlite))
CEdata <- read.csv(file.path(data_dir, "CEdata.csv"))
i <- seq_len(nrow(CEdata)) - 1
CEdata$Expenditure[i %% 17 == 3] <- NA
CEdata$Expenditure[i %% 29 == 7 & !is.na(CEdata$Expenditure)] <- -1
CEdata$Marital[i %% 23 == 5] <- NA
for (v in c("Urban", "Marital", "Tenure")) CEdata[[v]] <- as.factor(CEdata[[v]])
s <- syn(CEdata, method = c(Age = "", Urban = "logreg", Tenure = "sample", Educ = "",
                            Expenditure = "norm", Marital = "polyreg", Income = "norm"),
         visit.sequence = c("Tenure", "Marital", "Urban", "Expenditure", "Income"),
         cont.na = list(Expenditure = c(NA, -1)), models = TRUE, seed = 1, print.flag = FALSE)
m <- s$models
norm <- function(f) list(names = rownames(f$beta), beta = unname(f$beta[, 1]), sigma = f$sigma)
mult <- function(f) list(levels = f$lev, names = colnames(f$coefficients),
                         coefficients = unname(f$coefficients))
fits <- list(
  call = paste("syn(CEdata, method = c(Age = '', Urban = 'logreg', Tenure = 'sample',",
               "Educ = '', Expenditure = 'norm', Marital = 'polyreg', Income = 'norm'),",
               "visit.sequence = c('Tenure', 'Marital', 'Urban', 'Expenditure', 'Income'),",
               "cont.na = list(Expenditure = c(NA, -1)), models = TRUE, seed = 1)"),
  Expenditure.0 = norm(m$Expenditure), Income = norm(m$Income),
  Urban = list(names = rownames(m$Urban$coefficients),
               coefficients = unname(m$Urban$coefficients[, 1])),
  Marital = mult(m$Marital), Expenditure.NA = mult(m[["Expenditure.NA"]]))
write(toJSON(fits, digits = NA, auto_unbox = TRUE, pretty = TRUE),
      file.path(out, "missing_fits.json"))

# The methods normrank, pmm and polr (synthpop 1.9-2's syn.normrank, syn.pmm, syn.polr) on the
# first 1000 records of CEdata, for test_other_methods_match_the_synthpop_releases and
# test_other_method_fits_are_synthpops. Age and Educ are visited with method "" (kept,
# predictors of the later columns), Tenure and Marital drawn by polr, Income by normrank, and
# Expenditure by pmm on Age, Educ and Income (the predictor matrix) with proper = TRUE only.
# synthpop 1.9-2's pmm stops with proper = FALSE (syn.pmm reads parm$coef, which
# .norm.fix.syn does not return) and with a factor predictor (padModel.syn gives pmm no
# dummies); its polr stops in summary.polr when a predictor is on the scale of Income
# (the Hessian's inverse is not finite), hence the predictors chosen here.
# m = 20 releases with proper = FALSE (other_plugin.csv.gz: Expenditure "") and proper = TRUE
# (other_proper.csv.gz), their synthesized columns as for the scenarios above, and the fits
# (models = TRUE) in other_fits.json: polr's coefficients and cut points of the proper = FALSE
# call, normrank's beta and sigma (on the normal scores) of that call, and pmm's least-squares
# coefficients (`coef`, not the drawn `beta`) of the first proper = TRUE dataset.
CEdata <- read.csv(file.path(data_dir, "CEdata.csv"))[1:1000, ]
for (v in c("Urban", "Marital", "Tenure")) CEdata[[v]] <- as.factor(CEdata[[v]])
# the synthesized columns of synthpop's release s, one row per record and dataset, after
# checking that every other column is CEdata's
write_release <- function(s, cols, file) {
  rel <- do.call(rbind, lapply(seq_along(s$syn), function(j) {
    d <- s$syn[[j]]
    stopifnot(isTRUE(all.equal(d[setdiff(names(CEdata), cols)],
                               CEdata[setdiff(names(CEdata), cols)])))
    data.frame(dataset = j, d[cols])
  }))
  for (v in c("Marital", "Tenure")) rel[[v]] <- as.integer(as.character(rel[[v]]))
  write.csv(rel, gzfile(file.path(out, file)), row.names = FALSE)
}
other_visit <- c("Age", "Educ", "Tenure", "Marital", "Income", "Expenditure")
pm <- matrix(0, ncol(CEdata), ncol(CEdata), dimnames = list(names(CEdata), names(CEdata)))
for (k in 2:length(other_visit)) pm[other_visit[k], other_visit[1:(k - 1)]] <- 1
pm["Expenditure", ] <- 0
pm["Expenditure", c("Age", "Educ", "Income")] <- 1
# syn.polr keeps summary(polr(...)): its coefficient table, slopes then cut points
polr_fit <- function(f) list(names = rownames(f$coefficients),
                             coefficients = unname(f$coefficients[, "Value"]))
fits <- list(call = paste(
  "syn(CEdata[1:1000, ], method = c(Age = '', Urban = '', Tenure = 'polr', Educ = '',",
  "Expenditure = 'pmm' (proper = TRUE) or '', Marital = 'polr', Income = 'normrank'),",
  "visit.sequence = c('Age', 'Educ', 'Tenure', 'Marital', 'Income', 'Expenditure'),",
  "predictor.matrix = pm (Expenditure: Age, Educ, Income), m = 20, models = TRUE,",
  "proper = FALSE, seed = 1 / proper = TRUE, seed = 2)"))
for (proper in c(FALSE, TRUE)) {
  cols <- c("Tenure", "Marital", "Income", if (proper) "Expenditure")
  method <- c(Age = "", Urban = "", Tenure = "polr", Educ = "",
              Expenditure = if (proper) "pmm" else "", Marital = "polr", Income = "normrank")
  s <- syn(CEdata, method = method, visit.sequence = other_visit, predictor.matrix = pm,
           m = 20, proper = proper, models = TRUE, seed = if (proper) 2 else 1,
           print.flag = FALSE)
  stopifnot(identical(unname(s$method[cols]), unname(method[cols])))
  write_release(s, cols, sprintf("other_%s.csv.gz", if (proper) "proper" else "plugin"))
  m <- s$models[[1]]
  if (proper) {
    fits$Expenditure <- list(names = rownames(m$Expenditure$coef),
                             coef = unname(m$Expenditure$coef[, 1]))
  } else {
    fits$Income <- norm(m$Income)
    fits$Tenure <- polr_fit(m$Tenure)
    fits$Marital <- polr_fit(m$Marital)
  }
}
write(toJSON(fits, digits = NA, auto_unbox = TRUE, pretty = TRUE),
      file.path(out, "other_fits.json"))

# The method rf (synthpop 1.9-2's syn.rf: randomForest with ntree = 10, donors every record
# sharing a leaf in any tree; proper is ignored) on the same 1000 records: Age and Educ kept,
# Tenure, Marital and Income by rf on Age and Educ (the predictor matrix). Numeric predictors
# only: randomForest splits a factor by subsets of its levels, which the package approximates
# (its levels ordered by their mean outcome), see the user guide.
# m = 100 releases in other_rf.csv.gz, for test_other_methods_match_the_synthpop_releases
# (100 rather than 20: the mean of 20 datasets is too coarse a reference for a comparison at
# |z| <= 2.5; the first 20 are those of the former m = 20 call, same seed).
rf_visit <- c("Age", "Educ", "Tenure", "Marital", "Income")
rf_cols <- c("Tenure", "Marital", "Income")
pm <- matrix(0, ncol(CEdata), ncol(CEdata), dimnames = list(names(CEdata), names(CEdata)))
pm[rf_cols, c("Age", "Educ")] <- 1
s <- syn(CEdata, method = c(Age = "", Urban = "", Tenure = "rf", Educ = "", Expenditure = "",
                            Marital = "rf", Income = "rf"),
         visit.sequence = rf_visit, predictor.matrix = pm, m = 100, seed = 3, print.flag = FALSE)
stopifnot(identical(unname(s$method[rf_cols]), rep("rf", 3)))
write_release(s, rf_cols, "other_rf.csv.gz")

# The method ctree (synthpop 1.9-2's syn.ctree: party::ctree with minbucket = 5 and
# mincriterion = 0.9, donors the records of the synthetic record's leaf; proper = FALSE, as
# synthpop's proper = TRUE branch stops with an error) on the same 1000 records: Age, Educ and
# Urban kept and predictors (Urban a factor: party's splits by sets of levels); Tenure,
# Marital and Income by ctree on the columns visited before each. m = 20 releases in
# other_ctree.csv.gz, for test_other_methods_match_the_synthpop_releases.
ct_visit <- c("Age", "Educ", "Urban", "Tenure", "Marital", "Income")
ct_cols <- c("Tenure", "Marital", "Income")
s <- syn(CEdata, method = c(Age = "", Urban = "", Tenure = "ctree", Educ = "",
                            Expenditure = "", Marital = "ctree", Income = "ctree"),
         visit.sequence = ct_visit, m = 20, seed = 4, print.flag = FALSE)
stopifnot(identical(unname(s$method[ct_cols]), rep("ctree", 3)))
write_release(s, ct_cols, "other_ctree.csv.gz")

# party's own trees on the same records, for test_ctree_grows_partys_tree: Income on Age,
# Educ, Urban and Marital, and Tenure on Age, Educ, Marital and Income, with syn.ctree's
# controls. ctree_splits.json lists each tree's nodes in pre-order: an inner node's input and
# cutpoint (x <= cutpoint goes left) or the levels that go left, a leaf's number of records.
suppressMessages(library(party))
walk <- function(nd) {
  if (nd$terminal) return(list(list(leaf = sum(nd$weights))))
  s <- nd$psplit
  here <- if (is.null(attr(s$splitpoint, "levels")))
    list(input = s$variableName, cutpoint = s$splitpoint) else
    list(input = s$variableName,
         left_levels = attr(s$splitpoint, "levels")[s$splitpoint == 1])
  c(list(here), walk(nd$left), walk(nd$right))
}
splits <- list()
for (f in c("Income ~ Age + Educ + Urban + Marital", "Tenure ~ Age + Educ + Marital + Income")) {
  t <- ctree(as.formula(f), data = CEdata,
             controls = ctree_control(minbucket = 5, mincriterion = 0.9))
  splits[[f]] <- walk(t@tree)
}
write(toJSON(splits, digits = NA, auto_unbox = TRUE, pretty = TRUE),
      file.path(out, "ctree_splits.json"))
