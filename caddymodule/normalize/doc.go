// Package normalize runs the jq programs an offer declares: the request
// program that builds an upstream request body, and the normalize program
// that turns one raw upstream item into a record.
//
// Its one concern is running those programs fast and exactly as gojq, the
// reference engine, would. A normalize program that fits a common subset of
// jq is compiled into a plan (plan.go and the files beside it: values,
// validation, writing, comparison, evaluators, builtins, compiler, the
// key tables of indexed objects) that
// reads the item's bytes in place and writes the record's bytes directly;
// every other program, and every item the plan gives up on, runs on gojq
// (program.go). The helpers programs may call beside jq's builtins
// (toint, tonum, iso8601, nonempty) are in helpers.go.
package normalize
