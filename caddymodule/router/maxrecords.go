package router

// MaxRecords is the most records a call's attempt may ask the upstream
// for, what its Budget is asked to cover: an async submit reserves it
// before answering 202, so an unpayable run is refused as a sync call is.
func (req Request) MaxRecords() int { return req.records() }

// LeastRecords is the fewest records worth a hold (see Budget.Reserve).
func (req Request) LeastRecords() int { return req.least() }
