package clickhousex

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	clickhouse "github.com/ClickHouse/clickhouse-go"
	"github.com/ClickHouse/clickhouse-go/lib/data"

	"github.com/sluicehq/sluice"
)

// Column is one column of a [Writer] made by [NewColumnWriter]: its name,
// its ClickHouse type, and how to read its value from an item. Make one
// with [UInt64Column], [Int64Column], [Float64Column] or [StringColumn];
// each panics, naming the column, if its value function is nil.
type Column[T any] struct {
	name   string
	chType string
	write  func(b *data.Block, c int, item *T) error
}

// UInt64Column is a column of ClickHouse type UInt64 whose value for an
// item v returns.
func UInt64Column[T any](name string, v func(*T) uint64) Column[T] {
	noValue(name, v == nil)
	return Column[T]{name, "UInt64", func(b *data.Block, c int, it *T) error { return b.WriteUInt64(c, v(it)) }}
}

// Int64Column is a column of ClickHouse type Int64 whose value for an
// item v returns.
func Int64Column[T any](name string, v func(*T) int64) Column[T] {
	noValue(name, v == nil)
	return Column[T]{name, "Int64", func(b *data.Block, c int, it *T) error { return b.WriteInt64(c, v(it)) }}
}

// Float64Column is a column of ClickHouse type Float64 whose value for an
// item v returns.
func Float64Column[T any](name string, v func(*T) float64) Column[T] {
	noValue(name, v == nil)
	return Column[T]{name, "Float64", func(b *data.Block, c int, it *T) error { return b.WriteFloat64(c, v(it)) }}
}

// StringColumn is a column of ClickHouse type String whose value for an
// item v returns.
func StringColumn[T any](name string, v func(*T) string) Column[T] {
	noValue(name, v == nil)
	return Column[T]{name, "String", func(b *data.Block, c int, it *T) error { return b.WriteString(c, v(it)) }}
}

// noValue panics for a column made with a nil value function.
func noValue(name string, isNil bool) {
	if isNil {
		panic(fmt.Sprintf("clickhousex: column %q: nil value function", name))
	}
}

// NewColumnWriter returns a Writer that inserts into table the given
// columns, appending each item's values to the insert's block directly,
// typed, instead of through a []any per row as [NewWriter]'s does: no
// slice and no boxed value per row, and no conversion. It inserts, batches,
// commits and counts exactly as NewWriter's. Every insert first checks the
// table's columns against cols (names as given, types exactly as
// declared: a UInt64Column for a UInt64 column, not for Nullable(UInt64)
// or UInt32); a mismatch fails the insert, before any row is sent, with an
// error marked [sluice.Permanent]. Since every value has its column's
// type, no row is ever left out for its values. Panics if db is nil,
// table is empty, there are no columns, or a column has no name or no
// value function.
func NewColumnWriter[T any](db *sql.DB, table string, cols []Column[T], opts ...WriterOption) *Writer[T] {
	names := make([]string, len(cols))
	for i, c := range cols {
		if c.name == "" || c.write == nil {
			panic(fmt.Sprintf("clickhousex: NewColumnWriter %s: column %d has no name or no value function (make it with UInt64Column, Int64Column, Float64Column or StringColumn)", table, i))
		}
		names[i] = c.name
	}
	w := newWriter[T]("NewColumnWriter", db, table, names, opts)
	w.cols = append([]Column[T](nil), cols...)
	return w
}

// blockConn is the driver's connection as its direct (columnar) interface
// sees it: the block of the insert prepared in the open transaction.
type blockConn interface {
	Block() (*data.Block, error)
	WriteBlock(*data.Block) error
}

var _ blockConn = clickhouse.Clickhouse(nil)

// columnBlockRows is how many rows NewColumnWriter's inserts send as one
// block: the driver's own block size (a variable for the tests).
var columnBlockRows = driverBlockRows

// appendColumns appends the rows of parts to the block of the insert
// prepared on dc, column by column, sending a block of columnBlockRows
// rows whenever one fills (as the driver does for rows it appends).
func (w *Writer[T]) appendColumns(ctx context.Context, dc any, parts [][]T, fail func(string, error) error) error {
	bc, ok := dc.(blockConn)
	if !ok {
		return fail("block", fmt.Errorf("the driver's connection (%T) has no Block and WriteBlock", dc))
	}
	b, err := bc.Block()
	if err != nil {
		return fail("block", err)
	}
	if err := w.checkColumns(b); err != nil {
		return sluice.Permanent(fail("columns", err))
	}
	b.Reserve()
	i := 0
	for _, rows := range parts {
		for r := range rows {
			if i++; i%ctxCheckRows == 0 && ctx.Err() != nil {
				return fail("row", context.Cause(ctx))
			}
			for c := range w.cols {
				if err := w.cols[c].write(b, c, &rows[r]); err != nil {
					return fail("row", err)
				}
			}
			b.NumRows++
			if b.NumRows == uint64(columnBlockRows) {
				if err := bc.WriteBlock(b); err != nil {
					return fail("block", err)
				}
			}
		}
	}
	return nil
}

// checkColumns compares the insert's block, as the server described the
// table's columns, with the writer's.
func (w *Writer[T]) checkColumns(b *data.Block) error {
	if len(b.Columns) != len(w.cols) {
		return fmt.Errorf("the server expects %d columns, the writer has %d", len(b.Columns), len(w.cols))
	}
	var bad []string
	for i, c := range b.Columns {
		if want := w.cols[i]; c.Name() != want.name || c.CHType() != want.chType {
			bad = append(bad, fmt.Sprintf("column %d is %s %s in the table, %s %s in the writer", i+1, c.Name(), c.CHType(), want.name, want.chType))
		}
	}
	if bad != nil {
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return nil
}
