package sdr_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"time"

	sdr "socialrouter/sdk/go"
)

// The first call, with a test key (the README's and the dashboard's
// quick start).
func ExampleClient() {
	ctx := context.Background()
	client := sdr.NewClient(os.Getenv("SDR_TEST_KEY"), sdr.WithBaseURL(os.Getenv("SDR_BASE_URL"))) // sdr_test_…
	req := sdr.ProNetCompanyInfoRequest{URL: "https://www.linkedin.com/company/the-kraft-heinz-company"}
	run, err := client.Extract.ProNet.CompanyInfo(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(*run.Data[0].Company, run.CreditsUsed, *run.Livemode) // …, false
}

// An async run of up to 5,000 records: wait, then range over its records.
func ExampleRunHandle() {
	ctx := context.Background()
	client := sdr.NewClient(os.Getenv("SDR_KEY"))
	h, err := client.Extract.ForumNet.SubredditPostsAsync(ctx, sdr.ForumNetSubredditPostsRequest{URL: "https://www.reddit.com/r/golang", Limit: 5000})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	if _, err := h.Wait(ctx); err != nil {
		log.Fatal(err)
	}
	for post, err := range h.Records(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(*post.Title)
	}
}

// Telling errors apart with errors.As.
func ExampleAPIError() {
	client := sdr.NewClient(os.Getenv("SDR_KEY"))
	_, err := client.Extract.ProNet.ProfileInfo(context.Background(), sdr.ProNetProfileInfoRequest{URL: "https://www.linkedin.com/in/rbranson"})
	var apiErr *sdr.APIError
	switch {
	case errors.As(err, &apiErr) && apiErr.IsMoney():
		fmt.Println("top up:", apiErr.Code)
	case errors.As(err, &apiErr):
		fmt.Println(apiErr.Status, apiErr.Code, apiErr.Type, apiErr.RunID)
	}
}

// A webhook receiver.
func ExampleWebhook() {
	wh, err := sdr.NewWebhook(os.Getenv("SDR_WEBHOOK_SECRET"))
	if err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("/hooks/sdr", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ev, err := wh.Verify(r.Header, body)
		if err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		fmt.Println(ev.ID, ev.Type)
	})
}
