package clickhousex

// SetColumnBlockRows makes NewColumnWriter's inserts send a block every n
// rows until the returned function restores the default.
func SetColumnBlockRows(n int) (restore func()) {
	columnBlockRows = n
	return func() { columnBlockRows = driverBlockRows }
}
