package sluice

import "log/slog"

// Logger makes the pipeline log what an operator needs to know to l:
// stage failures, retries given up, dead letters (counted per interval,
// never a line per item), drains and their grace, and Auto's decisions,
// with the pipeline's and stage's names as attributes. A nil l means no
// logs, the default: a library logs nothing unless asked.
func Logger(l *slog.Logger) Option { return optionFunc(func(c *config) { c.logger = l }) }
