# synthpop's syn() with CART for Tenure, Expenditure and Income of CEdata, the others kept (the
# call of Hornby & Hu 2021's scenario 4): the R column of the benchmarks table. Usage:
#   Rscript cart.R ORIGINAL.csv M
suppressPackageStartupMessages(library(synthpop))
a <- commandArgs(TRUE)
d <- read.csv(a[1], colClasses = c(Urban = "factor", Marital = "factor", Tenure = "factor"))
s <- syn(d, method = c(Age = "", Urban = "", Tenure = "cart", Educ = "", Expenditure = "cart",
                       Marital = "", Income = "cart"),
         visit.sequence = c("Age", "Urban", "Marital", "Educ", "Tenure", "Expenditure", "Income"),
         m = as.integer(a[2]), seed = 1, print.flag = FALSE)
