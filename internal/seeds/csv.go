package seeds

import (
	"encoding/csv"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// This file follows seed 003 (shared/seeds/003_36b83137c732f495.txt): its
// IO-bound experiment loads five CSV files with encoding/csv, once in a
// loop and once with a goroutine per file. The seed used public datasets;
// WriteCSV makes stand-ins with the same names and column shapes, so that
// the experiment runs anywhere, deterministically.
//
// The seed's concurrent loader stored each result into a shared map from
// its goroutine, a data race that its readers pointed out. LoadPerFile
// stores into distinct slice elements instead; the cost measured is the
// same.

// CSVNames are the files of seed 003's experiment, in the seed's order.
var CSVNames = []string{"AgeDataset-V1.csv", "neo_v2.csv", "nba.csv", "airquality.csv", "titanic.csv"}

// DefaultCSVBytes is the default total size of the files WriteCSV makes.
const DefaultCSVBytes = 40 << 20

// csvShare is each file's share of the total size, in CSVNames order, in
// percent: uneven like the seed's datasets, but none under a few MB at the
// default total, so that no one file dominates the load.
var csvShare = []int64{40, 25, 10, 15, 10}

// WriteCSV writes the files named in CSVNames into dir, about totalBytes
// bytes in all (each file gets a header and at least one row), and returns
// their paths in CSVNames order. The rows are drawn from generators seeded
// with seed: the same arguments give byte-identical files. Columns mix
// integers, decimals, free text (some with commas and quotes, so some fields
// are quoted), categories, years, dates and times, and empty fields.
// It panics if totalBytes < 0.
func WriteCSV(dir string, totalBytes int64, seed uint64) ([]string, error) {
	if totalBytes < 0 {
		panic(fmt.Sprintf("seeds: WriteCSV needs totalBytes ≥ 0, got %d", totalBytes))
	}
	gens := []func(*rand.Rand, int) []string{csvAgeRow, csvNeoRow, csvNbaRow, csvAirRow, csvTitanicRow}
	headers := [][]string{csvAgeHeader, csvNeoHeader, csvNbaHeader, csvAirHeader, csvTitanicHeader}
	paths := make([]string, len(CSVNames))
	for i, name := range CSVNames {
		paths[i] = filepath.Join(dir, name)
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		if err := writeCSVFile(paths[i], totalBytes*csvShare[i]/100, headers[i], func(row int) []string {
			return gens[i](rng, row)
		}); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// writeCSVFile writes header and then rows from next until about size bytes
// (counting fields, separators and line ends, not quotes) have been written.
func writeCSVFile(path string, size int64, header []string, next func(row int) []string) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	w := csv.NewWriter(f) // buffers 4 KiB
	var written int64
	for row := -1; row < 1 || written < size; row++ {
		rec := header
		if row >= 0 {
			rec = next(row)
		}
		if err := w.Write(rec); err != nil {
			return err
		}
		for _, field := range rec {
			written += int64(len(field)) + 1
		}
	}
	w.Flush()
	return w.Error()
}

// ReadCSV is seed 003's ReadCsv with its errors returned: it parses the
// whole file at path with encoding/csv and returns its records, header
// included.
func ReadCSV(path string) (rows [][]string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() // read-only: a failed close loses nothing

	rows, err = csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}

// LoadSerial is seed 003's serial loader: it reads the files one after the
// other on the calling goroutine and returns their records, indexed like
// paths. Every file is read even if one fails; on any failure it returns
// nil and all the failures, joined in path order.
func LoadSerial(paths []string) ([][][]string, error) {
	rows := make([][][]string, len(paths))
	errs := make([]error, len(paths))
	for i, path := range paths {
		rows[i], errs[i] = ReadCSV(path)
	}
	return csvJoinLoad(rows, errs)
}

// LoadPerFile is seed 003's concurrent loader: one goroutine per file,
// joined with a WaitGroup; it returns what LoadSerial returns, after all its
// goroutines have finished.
func LoadPerFile(paths []string) ([][][]string, error) {
	rows := make([][][]string, len(paths))
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	wg.Add(len(paths))
	for i, path := range paths {
		go func() {
			defer wg.Done()
			rows[i], errs[i] = ReadCSV(path)
		}()
	}
	wg.Wait()
	return csvJoinLoad(rows, errs)
}

func csvJoinLoad(rows [][][]string, errs []error) ([][][]string, error) {
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rows, nil
}

// The generators below make one record each, shaped after the public
// datasets the seed named.

var csvAgeHeader = []string{"Id", "Name", "Short description", "Gender", "Country", "Occupation", "Birth year", "Death year", "Manner of death", "Age of death"}

func csvAgeRow(r *rand.Rand, row int) []string {
	birth := 1700 + r.IntN(290)
	age := 18 + r.IntN(80)
	occ := csvPick(r, csvOccupations)
	country := csvPick(r, csvCountries)
	desc := fmt.Sprintf("%s %s (%d–%d)", csvPick(r, csvNationalities), csvLower(occ), birth, birth+age)
	if r.IntN(5) == 0 {
		desc = fmt.Sprintf("%s, %s and %s", desc, csvLower(csvPick(r, csvOccupations)), csvLower(csvPick(r, csvOccupations)))
	}
	manner := ""
	if r.IntN(3) == 0 {
		manner = csvPick(r, csvManners)
	}
	return []string{
		"Q" + strconv.Itoa(1000+row*7+r.IntN(7)),
		csvPick(r, csvFirstNames) + " " + csvPick(r, csvLastNames),
		desc,
		csvPick(r, []string{"Male", "Female"}),
		country,
		occ,
		strconv.Itoa(birth),
		strconv.Itoa(birth + age),
		manner,
		strconv.Itoa(age),
	}
}

var csvNeoHeader = []string{"id", "name", "est_diameter_min", "est_diameter_max", "relative_velocity", "miss_distance", "orbiting_body", "sentry_object", "absolute_magnitude", "hazardous"}

func csvNeoRow(r *rand.Rand, row int) []string {
	id := 2000000 + row*3 + r.IntN(3)
	dmin := 0.001 + r.ExpFloat64()*0.1
	return []string{
		strconv.Itoa(id),
		fmt.Sprintf("%d (%d %s%d)", id%1000000, 1990+r.IntN(33), string(rune('A'+r.IntN(26)))+string(rune('A'+r.IntN(26))), r.IntN(400)),
		strconv.FormatFloat(dmin, 'f', 10, 64),
		strconv.FormatFloat(dmin*2.2361, 'f', 10, 64),
		strconv.FormatFloat(1000+r.Float64()*100000, 'f', 10, 64),
		strconv.FormatFloat(r.Float64()*75e6, 'f', 8, 64),
		"Earth",
		"False",
		strconv.FormatFloat(14+r.Float64()*19, 'f', 2, 64),
		strconv.FormatBool(r.IntN(10) == 0),
	}
}

var csvNbaHeader = []string{"Name", "Team", "Number", "Position", "Age", "Height", "Weight", "College", "Salary", "Birth date"}

func csvNbaRow(r *rand.Rand, _ int) []string {
	age := 19 + r.IntN(21)
	college := ""
	if r.IntN(4) != 0 {
		college = csvPick(r, csvColleges)
	}
	born := time.Date(2016-age, time.January, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(365))
	return []string{
		csvPick(r, csvFirstNames) + " " + csvPick(r, csvLastNames),
		csvPick(r, csvTeams),
		strconv.Itoa(r.IntN(100)),
		csvPick(r, []string{"PG", "SG", "SF", "PF", "C"}),
		strconv.Itoa(age),
		fmt.Sprintf("%d-%d", 6+r.IntN(2), r.IntN(12)),
		strconv.Itoa(160 + r.IntN(140)),
		college,
		strconv.FormatFloat(float64(50000+r.IntN(25000000)), 'f', 1, 64),
		born.Format("2006-01-02"),
	}
}

var csvAirHeader = []string{"Date", "Time", "CO(GT)", "PT08.S1(CO)", "NMHC(GT)", "C6H6(GT)", "PT08.S2(NMHC)", "NOx(GT)", "PT08.S3(NOx)", "NO2(GT)", "PT08.S4(NO2)", "PT08.S5(O3)", "T", "RH", "AH"}

var csvAirStart = time.Date(2004, time.March, 10, 18, 0, 0, 0, time.UTC)

func csvAirRow(r *rand.Rand, row int) []string {
	at := csvAirStart.Add(time.Duration(row) * time.Hour)
	rec := []string{at.Format("02/01/2006"), at.Format("15.04.05")}
	for range len(csvAirHeader) - 2 {
		if r.IntN(10) == 0 {
			rec = append(rec, "-200") // the UCI dataset's "missing"
			continue
		}
		rec = append(rec, strconv.FormatFloat(r.Float64()*2000, 'f', 1+r.IntN(3), 64))
	}
	return rec
}

var csvTitanicHeader = []string{"PassengerId", "Survived", "Pclass", "Name", "Sex", "Age", "SibSp", "Parch", "Ticket", "Fare", "Cabin", "Embarked"}

func csvTitanicRow(r *rand.Rand, row int) []string {
	sex, title := "male", csvPick(r, []string{"Mr.", "Master."})
	if r.IntN(3) == 0 {
		sex, title = "female", csvPick(r, []string{"Mrs.", "Miss."})
	}
	name := csvPick(r, csvLastNames) + ", " + title + " " + csvPick(r, csvFirstNames)
	if r.IntN(6) == 0 {
		name += ` "` + csvPick(r, csvFirstNames) + `"`
	}
	age, cabin := "", ""
	if r.IntN(5) != 0 {
		age = strconv.FormatFloat(float64(1+r.IntN(160))/2, 'f', -1, 64)
	}
	if r.IntN(4) == 0 {
		cabin = string(rune('A'+r.IntN(7))) + strconv.Itoa(1+r.IntN(130))
	}
	return []string{
		strconv.Itoa(row + 1),
		strconv.Itoa(r.IntN(2)),
		strconv.Itoa(1 + r.IntN(3)),
		name,
		sex,
		age,
		strconv.Itoa(r.IntN(5)),
		strconv.Itoa(r.IntN(4)),
		csvPick(r, []string{"A/5 ", "PC ", "STON/O2. ", "", ""}) + strconv.Itoa(1000+r.IntN(400000)),
		strconv.FormatFloat(r.ExpFloat64()*32, 'f', 4, 64),
		cabin,
		csvPick(r, []string{"S", "C", "Q"}),
	}
}

func csvPick(r *rand.Rand, from []string) string { return from[r.IntN(len(from))] }

func csvLower(s string) string {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return s
	}
	return string(s[0]+'a'-'A') + s[1:]
}

var (
	csvFirstNames    = []string{"James", "Mary", "John", "Patricia", "Robert", "Jennifer", "Michael", "Linda", "William", "Elizabeth", "David", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah", "Charles", "Karen", "Owen", "Adele", "Kevin", "Amir", "Yuki", "Ingrid", "Pierre", "Lucia", "Dmitri", "Fatima"}
	csvLastNames     = []string{"Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez", "Braund", "Cumings", "Heikkinen", "Futrelle", "Allen", "Moran", "McCarthy", "Palsson", "Nasser", "Sandstrom", "Bonnell", "Saundercock", "Andersson", "Vestrom", "Hewlett"}
	csvOccupations   = []string{"Politician", "Artist", "Athlete", "Researcher", "Military personnel", "Businessperson", "Writer", "Actor", "Architect", "Journalist", "Engineer", "Religious figure", "Composer", "Physician"}
	csvNationalities = []string{"American", "British", "French", "German", "Italian", "Russian", "Japanese", "Spanish", "Swedish", "Brazilian", "Indian", "Dutch"}
	csvCountries     = []string{"United States of America", "United Kingdom", "France", "German Empire", "Kingdom of Italy", "Russian Empire", "Japan", "Spain", "Sweden", "Brazil", "British Raj", "Kingdom of the Netherlands", "United States of America; Kingdom of Great Britain"}
	csvManners       = []string{"natural causes", "suicide", "accident", "homicide", "capital punishment", "unnatural death"}
	csvColleges      = []string{"Texas", "Marquette", "Boston University", "Georgia State", "LSU", "Gonzaga", "Louisville", "Oklahoma State", "Duke", "Kentucky", "North Carolina", "UCLA", "Kansas"}
	csvTeams         = []string{"Boston Celtics", "Brooklyn Nets", "New York Knicks", "Philadelphia 76ers", "Toronto Raptors", "Golden State Warriors", "Los Angeles Lakers", "Chicago Bulls", "Miami Heat", "San Antonio Spurs", "Utah Jazz", "Denver Nuggets"}
)
