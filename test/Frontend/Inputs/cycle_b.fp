// The other half of an import cycle (../import-errors.test).
import "cycle_a.fp"
