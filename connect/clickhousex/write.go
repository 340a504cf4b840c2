package clickhousex

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"

	"github.com/sluicehq/sluice"
)

// ctxCheckRows is how many rows an insert appends between two looks at its
// context: a cancelled insert stops within that many rows.
const ctxCheckRows = 1024

// write inserts the n rows of parts in one transaction on a connection of
// its own. It works on the driver's connection directly (sql.Conn.Raw):
// database/sql's per-call work — converting arguments, locking the
// statement, a result per call — cost more than the driver's own append of
// a row to its block. When the driver rejects a value, write returns its
// row's part and index in the part (else -1, -1) and an error marked
// sluice.Permanent.
func (w *Writer[T]) write(ctx context.Context, parts [][]T, n int) (part, row int, err error) {
	fail := func(step string, err error) error {
		return fmt.Errorf("clickhousex: inserting %d rows into %s: %s: %w", n, w.table, step, err)
	}
	// A connection the pool kept may have died meanwhile: the driver says
	// so as the transaction begins, and another is tried, as database/sql
	// does.
	for try := 1; ; try++ {
		var began bool
		part, row, began, err = w.writeOnce(ctx, parts, fail)
		if began || !errors.Is(err, driver.ErrBadConn) || try == badConnTries {
			return part, row, err
		}
		if w.log != nil {
			w.log.replaced.Add(1, slog.String("error", err.Error()))
		}
	}
}

// badConnTries is how many connections an insert tries when the ones the
// pool holds turn out to be closed.
const badConnTries = 3

// writeOnce is one try of write, on a connection of the pool; began
// reports that the transaction began.
func (w *Writer[T]) writeOnce(ctx context.Context, parts [][]T, fail func(string, error) error) (part, row int, began bool, err error) {
	conn, err := w.db.Conn(ctx)
	if err != nil {
		return -1, -1, false, fail("connect", err)
	}
	defer conn.Close()
	part, row = -1, -1
	_ = conn.Raw(func(dc any) error {
		part, row, began, err = w.writeOn(ctx, dc, parts, fail)
		if err != nil {
			// The driver closes its connection when a transaction rolls
			// back: the pool must drop it.
			return driver.ErrBadConn
		}
		return nil
	})
	return part, row, began, err
}

// writeOn is write on the driver connection dc.
func (w *Writer[T]) writeOn(ctx context.Context, dc any, parts [][]T, fail func(string, error) error) (part, row int, began bool, _ error) {
	begin, ok := dc.(driver.ConnBeginTx)
	prepare, ok2 := dc.(driver.ConnPrepareContext)
	if !ok || !ok2 {
		return -1, -1, false, fail("begin", fmt.Errorf("the driver's connection (%T) has no BeginTx and PrepareContext", dc))
	}
	tx, err := begin.BeginTx(ctx, driver.TxOptions{})
	if err != nil {
		return -1, -1, false, fail("begin", err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = tx.Rollback()
		}
	}()
	stmt, err := prepare.PrepareContext(ctx, w.query)
	if err != nil {
		return -1, -1, true, fail("prepare", err)
	}
	defer stmt.Close()
	if w.cols != nil {
		part, row, err = -1, -1, w.appendColumns(ctx, dc, parts, fail)
	} else {
		part, row, err = w.appendRows(ctx, dc, stmt, parts, fail)
	}
	if err != nil {
		return part, row, true, err
	}
	if err := ctx.Err(); err != nil {
		return -1, -1, true, fail("commit", context.Cause(ctx))
	}
	if err := tx.Commit(); err != nil {
		return -1, -1, true, fail("commit", err)
	}
	committed = true
	return -1, -1, true, nil
}

// appendRows appends the rows of parts to the insert prepared as stmt, a
// []any per row from w.row, converted as database/sql would. When the
// driver rejects a value, it returns its row's part and index in the part
// (else -1, -1) and an error marked sluice.Permanent.
func (w *Writer[T]) appendRows(ctx context.Context, dc any, stmt driver.Stmt, parts [][]T, fail func(string, error) error) (part, row int, _ error) {
	check, _ := dc.(driver.NamedValueChecker)
	vals := make([]driver.Value, w.columns)
	nv := new(driver.NamedValue) // one for every value: the check's argument escapes
	i := 0
	for p, rows := range parts {
		for r, v := range rows {
			if i++; i%ctxCheckRows == 0 && ctx.Err() != nil {
				return -1, -1, fail("row", context.Cause(ctx))
			}
			args := w.row(v)
			if len(args) != w.columns {
				return p, r, sluice.Permanent(fail("row", fmt.Errorf("%d values for %d columns", len(args), w.columns)))
			}
			if err := convert(check, nv, args, vals); err != nil {
				return p, r, sluice.Permanent(fail("row", err))
			}
			// The driver appends the row to the batch's block in memory, and
			// sends the block only when it holds driverBlockRows rows: an
			// error from any other row is about its values, and will recur.
			// (Exec, not ExecContext: the driver's ExecContext copies the
			// arguments into a new slice per row, and uses no context for
			// a row it only appends.)
			if _, err := stmt.Exec(vals); err != nil {
				err = fail("row", err)
				if i%driverBlockRows == 0 || ctx.Err() != nil {
					return -1, -1, err
				}
				return p, r, sluice.Permanent(err)
			}
		}
	}
	return -1, -1, nil
}

// convert turns a row's values into the driver's, as database/sql would:
// with the driver's own check, else the default conversion.
func convert(check driver.NamedValueChecker, nv *driver.NamedValue, args []any, vals []driver.Value) error {
	for k, a := range args {
		*nv = driver.NamedValue{Ordinal: k + 1, Value: a}
		err := driver.ErrSkip
		if check != nil {
			err = check.CheckNamedValue(nv)
		}
		if errors.Is(err, driver.ErrSkip) {
			nv.Value, err = driver.DefaultParameterConverter.ConvertValue(a)
		}
		if err != nil {
			return fmt.Errorf("value %d: %w", k+1, err)
		}
		vals[k] = nv.Value
	}
	return nil
}
