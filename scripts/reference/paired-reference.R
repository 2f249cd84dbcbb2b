# Reference values for src/analysis: Wilson intervals, Newcombe's paired interval (method 10),
# exact McNemar p-values (R's binom.test) and the minimum detectable change, written as JSON.
#
# Run:  Rscript scripts/reference/paired-reference.R > test/analysis/reference-values.json
# Needs only base R (Debian: apt-get install -y r-base-core). CI never runs this; tests read the JSON.

z <- qnorm(0.975)
z_power <- qnorm(0.8)

# Wilson score interval without continuity correction, by formula, checked against prop.test below.
wilson <- function(x, n) {
  p <- x / n
  z22n <- z^2 / (2 * n)
  spread <- z * sqrt(p * (1 - p) / n + z22n / (2 * n))
  lower <- if (x == 0) 0 else max(0, (p + z22n - spread) / (1 + 2 * z22n))
  upper <- if (x == n) 1 else min(1, (p + z22n + spread) / (1 + 2 * z22n))
  c(lower, upper)
}

check_wilson <- function(x, n) {
  ref <- suppressWarnings(prop.test(x, n, correct = FALSE)$conf.int)
  mine <- wilson(x, n)
  if (any(abs(ref - mine) > 1e-12)) stop(sprintf("Wilson mismatch for %d/%d", x, n))
}

# Newcombe (1998) method 10 for the paired difference p1 - p2, where p1 = after, p2 = before:
# a = both right, b = fixed (after only), c = broken (before only), d = both wrong.
newcombe10 <- function(a, b, c, d) {
  n <- a + b + c + d
  x1 <- a + b
  x2 <- a + c
  p1 <- x1 / n
  p2 <- x2 / n
  D <- (b - c) / n
  w1 <- wilson(x1, n)
  w2 <- wilson(x2, n)
  margins <- x1 * (n - x1) * x2 * (n - x2)
  phi <- 0
  if (margins > 0) {
    A <- a * d - b * c
    if (A > n / 2) phi <- (A - n / 2) / sqrt(margins)
    else if (A < 0) phi <- A / sqrt(margins)
  }
  dl1 <- p1 - w1[1]; du1 <- w1[2] - p1
  dl2 <- p2 - w2[1]; du2 <- w2[2] - p2
  lower <- D - sqrt(max(0, dl1^2 - 2 * phi * dl1 * du2 + du2^2))
  upper <- D + sqrt(max(0, dl2^2 - 2 * phi * dl2 * du1 + du1^2))
  c(max(-1, lower), min(1, upper))
}

mcnemar_p <- function(b, c) if (b + c == 0) 1 else binom.test(b, b + c, 0.5)$p.value

# Smallest delta with power 0.8 for a two-sided 0.05 test of paired proportions (Connor 1987),
# found numerically: power(delta) = pnorm((sqrt(n) delta - z sqrt(psi)) / sqrt(psi - delta^2)),
# psi = max(observed discordance, delta). NA when no delta in (0, 1) reaches 0.8.
detectable <- function(n, discordant) {
  observed <- discordant / n
  f <- function(delta) {
    psi <- max(observed, delta)
    pnorm((sqrt(n) * delta - z * sqrt(psi)) / sqrt(psi - delta^2)) - 0.8
  }
  lo <- 1e-300
  hi <- 1 - 1e-15
  if (f(hi) < 0) return(NA)
  uniroot(f, c(lo, hi), tol = 1e-16, maxiter = 10000)$root
}

cases <- list(
  list("single question, both right", 1, 0, 0, 0),
  list("single question, fixed", 0, 1, 0, 0),
  list("single question, broken", 0, 0, 1, 0),
  list("single question, both wrong", 0, 0, 0, 1),
  list("two fixed", 0, 2, 0, 0),
  list("tiny mixed", 3, 1, 1, 2),
  list("tiny improvement", 5, 3, 0, 2),
  list("all fixed, 6", 0, 6, 0, 0),
  list("all broken, 6", 0, 0, 6, 0),
  list("zero discordant, 30", 27, 0, 0, 3),
  list("one-sided margins", 27, 3, 0, 0),
  list("all right before, half broken", 15, 0, 15, 0),
  list("one broken of 30", 0, 0, 1, 29),
  list("twenty broken", 10, 0, 20, 0),
  list("moderate mixed", 8, 5, 4, 9),
  list("tie 5 vs 5", 10, 5, 5, 10),
  list("tie 7 vs 7", 40, 7, 7, 46),
  list("near tie, odd discordant", 20, 10, 11, 9),
  list("example from the brief", 107, 15, 2, 76),
  list("thirty fixed, four broken", 118, 30, 4, 48),
  list("all right both runs", 100, 0, 0, 0),
  list("all wrong both runs", 0, 0, 0, 100),
  list("medium improvement", 100, 25, 10, 65),
  list("large mixed", 500, 60, 40, 400),
  list("million, slight improvement", 600000, 50000, 49000, 301000),
  list("million, clear improvement", 700000, 120000, 80000, 100000),
  list("million, ten discordant", 999990, 5, 5, 0),
  list("million, all fixed", 0, 1000000, 0, 0),
  list("million, all broken", 0, 0, 1000000, 0),
  list("million, zero discordant", 500000, 0, 0, 500000),
  list("million, three fixed", 400000, 3, 0, 599997),
  list("thousand fixed, none broken", 0, 1000, 0, 0),
  list("1074 fixed, 4 broken", 0, 1070, 4, 0),
  list("forty million discordant, centre", 0, 20000000, 20000002, 0),
  list("forty million discordant, z about 1.6", 0, 20000000, 20010000, 0)
)

set.seed(20240601)
for (i in 1:40) {
  n <- round(10^runif(1, 0.5, 6))
  probs <- runif(4)
  cells <- as.vector(rmultinom(1, n, probs / sum(probs)))
  cases[[length(cases) + 1]] <- list(sprintf("random %d", i), cells[1], cells[2], cells[3], cells[4])
}

num <- function(x) if (is.na(x)) "null" else sprintf("%.17g", x)
pair <- function(v) sprintf("[%s, %s]", num(v[1]), num(v[2]))

rows <- character(0)
for (case in cases) {
  name <- case[[1]]
  a <- as.numeric(case[[2]]); b <- as.numeric(case[[3]]); c <- as.numeric(case[[4]]); d <- as.numeric(case[[5]])
  n <- a + b + c + d
  check_wilson(a + c, n)
  check_wilson(a + b, n)
  rows <- c(rows, sprintf(
    paste0('    {"name": "%s", "bothRight": %d, "fixed": %d, "broken": %d, "bothWrong": %d, ',
           '"wilsonBefore": %s, "wilsonAfter": %s, "newcombe": %s, "mcnemarP": %s, "detectableChange": %s}'),
    name, a, b, c, d,
    pair(wilson(a + c, n)), pair(wilson(a + b, n)), pair(newcombe10(a, b, c, d)),
    num(mcnemar_p(b, c)), num(detectable(n, b + c))
  ))
}

cat("{\n")
cat(sprintf('  "generator": "scripts/reference/paired-reference.R, %s",\n', R.version.string))
cat(sprintf('  "constants": {"zAlpha": %s, "zPower": %s},\n', num(z), num(z_power)))
cat('  "cases": [\n')
cat(paste(rows, collapse = ",\n"))
cat("\n  ]\n}\n")
