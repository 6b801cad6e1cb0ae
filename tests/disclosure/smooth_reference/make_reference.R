# Reference of bayes_risk.disclosure.sdc's smoothing: R's smoothing spline of the sorted values
# on their positions, as synthpop's sdc(smooth.vars = ...) fits it, with a knot at every value
# (all.knots = TRUE, which the package fits) and with synthpop's reduced knot set
# (all.knots = FALSE). R 4.2.2 (stats); run from this folder: Rscript make_reference.R
set.seed(1)
y <- round(exp(rnorm(200, 10, 1)))
s <- sort(y)
all_knots <- smooth.spline(s, all.knots = TRUE)
synthpop <- smooth.spline(s, all.knots = FALSE)
write.csv(data.frame(y = y, sorted = s, all_knots = all_knots$y, synthpop = synthpop$y),
          "smooth_spline.csv", row.names = FALSE)
