package extract

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
)

func TestDates(t *testing.T) {
	cases := map[string]string{
		"2024-03-15":             "2024-03-15",
		"15.03.2024":             "2024-03-15",
		"15/03/2024":             "2024-03-15",
		"03/15/2024":             "2024-03-15",
		"15. März 2024":          "2024-03-15",
		"15 March 2024":          "2024-03-15",
		"March 15, 2024":         "2024-03-15",
		"Mar 15th 2024":          "2024-03-15",
		"1er mars 2024":          "2024-03-01",
		"15 décembre 2023":       "2023-12-15",
		"15 de marzo de 2024":    "2024-03-15",
		"15 maggio 2024":         "2024-05-15",
		"2024-03-15T10:00:00Z":   "2024-03-15",
		"31.02.2024":             "",
		"no date":                "",
		"15.03.24":               "2024-03-15",
		"Invoice 12.03/2024 foo": "",
	}
	for in, want := range cases {
		if got := NormalizeDate(in); got != want {
			t.Errorf("NormalizeDate(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAmounts(t *testing.T) {
	cases := map[string]string{
		"1.234,56": "1234.56", "1,234.56": "1234.56", "1 234,56": "1234.56",
		"12,5": "12.50", "1.234": "1234.00", "99.99": "99.99", "€ 1.000.000,00": "1000000.00",
	}
	for in, want := range cases {
		if got := NormalizeAmount(in); got != want {
			t.Errorf("NormalizeAmount(%q) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct{ text, amount, cur string }{
		{"Item 10,00 €\nItem 20,00 €\nGesamtbetrag: 1.234,56 €", "1234.56", "EUR"},
		{"Subtotal $90.00\nTax $9.00\nTotal: $99.00\nPaid $99.00", "99.00", "USD"},
		{"Betrag CHF 1'250.50", "1250.50", "CHF"},
		{"Amount due £ 15.20", "15.20", "GBP"},
		{"Prices: 5 EUR, 12 EUR, 7 EUR", "12.00", "EUR"},
		{"Total USD 1,234.56", "1234.56", "USD"},
	} {
		a, cur, ok := documentAmount(c.text)
		if !ok || a != c.amount || cur != c.cur {
			t.Errorf("documentAmount(%q) = %q %q, want %q %q", c.text, a, cur, c.amount, c.cur)
		}
	}
}

func TestIBAN(t *testing.T) {
	if !ValidIBAN("DE89 3704 0044 0532 0130 00") || !ValidIBAN("GB82WEST12345698765432") {
		t.Fatal("valid IBANs rejected")
	}
	if ValidIBAN("DE89 3704 0044 0532 0130 01") || ValidIBAN("DE89370400440532013") {
		t.Fatal("invalid IBAN accepted")
	}
	if got := findIBAN("Bitte überweisen Sie auf IBAN DE89 3704 0044 0532 0130 00 BIC COBADEFFXXX"); got != "DE89370400440532013000" {
		t.Fatalf("findIBAN = %q", got)
	}
	if got := findIBAN("IBAN DE00 1234 5678 9012 3456 78"); got != "" {
		t.Fatalf("bad checksum found: %q", got)
	}
}

func TestLanguage(t *testing.T) {
	cases := map[string]string{
		"This is the invoice for the services that you ordered from our shop.":               "en",
		"Dies ist die Rechnung für die Leistungen, die Sie bei uns bestellt haben und nicht": "de",
		"Voici la facture pour les services que vous avez commandés dans notre boutique.":    "fr",
		"Esta es la factura de los servicios que usted ha pedido en nuestra tienda.":         "es",
		"Questa è la fattura per i servizi che lei ha ordinato nel nostro negozio, grazie":   "it",
		"12345": "",
	}
	for in, want := range cases {
		if got := DetectLanguage(in); got != want {
			t.Errorf("DetectLanguage(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRulesInvoice(t *testing.T) {
	text := `ACME Consulting GmbH
Hauptstraße 1, 10115 Berlin

RECHNUNG

Rechnungsnummer: RE-2024-0042
Rechnungsdatum: 15.03.2024
Lieferdatum: 01.03.2024

Sehr geehrte Damen und Herren,
für die Beratung im März berechnen wir Ihnen:

Beratung 10 Stunden      1.000,00 €
MwSt 19 %                  190,00 €
Gesamtbetrag:            1.190,00 €

Zahlbar bis 31.03.2024 auf IBAN DE89 3704 0044 0532 0130 00.
Mit freundlichen Grüßen`
	m, err := NewRules().Extract(context.Background(), text, "scan_0001.pdf")
	if err != nil {
		t.Fatal(err)
	}
	want := docflow.Metadata{DocumentType: "invoice", Date: "2024-03-15", Amount: "1190.00", Currency: "EUR",
		IBAN: "DE89370400440532013000", ReferenceNumber: "RE-2024-0042", Sender: "ACME Consulting GmbH", Language: "de"}
	if m.DocumentType != want.DocumentType || m.Date != want.Date || m.Amount != want.Amount || m.Currency != want.Currency ||
		m.IBAN != want.IBAN || m.ReferenceNumber != want.ReferenceNumber || m.Sender != want.Sender || m.Language != want.Language {
		t.Fatalf("got %+v\nwant %+v", *m, want)
	}
	if m.Title == "" || len(m.Tags) == 0 || len(m.Tags) > 4 || m.Tags[0] != "invoice" || m.Provider != "rules" {
		t.Fatalf("title %q tags %v provider %q", m.Title, m.Tags, m.Provider)
	}
}

func TestRulesEnglishAndEmpty(t *testing.T) {
	text := "Invoice\nFrom: Widgets Ltd\nInvoice No. INV-7781\nDate: March 5, 2024\nTotal due: $1,234.56\nThank you for your business."
	m, err := NewRules().Extract(context.Background(), text, "")
	if err != nil {
		t.Fatal(err)
	}
	if m.Sender != "Widgets Ltd" || m.ReferenceNumber != "INV-7781" || m.Date != "2024-03-05" || m.Amount != "1234.56" || m.Currency != "USD" {
		t.Fatalf("got %+v", *m)
	}
	if !strings.Contains(m.Title, "Widgets Ltd") {
		t.Fatalf("title %q should name the sender", m.Title)
	}
	m, err = NewRules().Extract(context.Background(), "", "Vacation_Photos-2024.jpg")
	if err != nil || m.Title != "Vacation Photos 2024" {
		t.Fatalf("empty text: %+v %v", m, err)
	}
}

func TestParseReply(t *testing.T) {
	m, err := ParseReply("```json\n{\"title\":\"Invoice 42\",\"document_type\":\"Bank Statement\",\"tags\":[\"A\",\"b\",\"a\",\"c\",\"d\",\"e\"],\"date\":\"15.03.2024\",\"amount\":1190,\"currency\":\"€\",\"language\":\"German\",\"confidence\":87}\n```")
	if err != nil {
		t.Fatal(err)
	}
	if m.Title != "Invoice 42" || m.DocumentType != "bank_statement" || len(m.Tags) != 4 || m.Date != "2024-03-15" ||
		m.Amount != "1190.00" || m.Currency != "EUR" || m.Language != "de" || m.Confidence != 0.87 {
		t.Fatalf("got %+v", *m)
	}
	for _, bad := range []string{"Sure! The title is Invoice 42.", "[1,2]", "{\"title\": ", "{} trailing", ""} {
		if _, err := ParseReply(bad); err == nil {
			t.Errorf("ParseReply(%q) accepted", bad)
		}
	}
}

// chatServer answers with the replies in order (the last one repeats); a
// reply of "SLOW" sleeps past the client's timeout first.
func chatServer(t *testing.T, hits *atomic.Int32, replies ...string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(hits.Add(1))
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "gpt-test" || len(req.Messages) != 2 || !strings.Contains(req.Messages[1].Content, "ACME") {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		content := replies[min(n, len(replies))-1]
		switch content {
		case "SLOW":
			time.Sleep(400 * time.Millisecond)
			content = `{"title":"late"}`
		case "500":
			http.Error(w, "overloaded", http.StatusInternalServerError)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}}}})
	}))
}

func newTestOpenAI(t *testing.T, url string) *OpenAI {
	p, err := New(Config{Provider: "openai", OpenAI: OpenAIConfig{BaseURL: url + "/v1", APIKey: "sk-test", Model: "gpt-test",
		Timeout: 150 * time.Millisecond, Attempts: 3, Backoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return p.(*OpenAI)
}

func TestOpenAIRetriesThenSucceeds(t *testing.T) {
	var hits atomic.Int32
	srv := chatServer(t, &hits, "SLOW", "500", `{"title":"ACME invoice","document_type":"invoice","tags":["acme"],"sender":"ACME","date":"2024-03-15","amount":"1.190,00","currency":"EUR","language":"de","reference_number":"RE-1","confidence":0.9}`)
	defer srv.Close()
	m, err := newTestOpenAI(t, srv.URL).Extract(context.Background(), "ACME Rechnung", "x.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 3 || m.Title != "ACME invoice" || m.Amount != "1190.00" || m.Provider != "openai" || m.Confidence != 0.9 {
		t.Fatalf("hits %d meta %+v", hits.Load(), *m)
	}
}

func TestOpenAIProseFails(t *testing.T) {
	var hits atomic.Int32
	srv := chatServer(t, &hits, "I'm sorry, but I can only describe the document: it is an invoice from ACME.")
	defer srv.Close()
	_, err := newTestOpenAI(t, srv.URL).Extract(context.Background(), "ACME Rechnung", "x.pdf")
	if err == nil || !strings.Contains(docflow.ErrorMessage(err), "did not return a JSON object") {
		t.Fatalf("want not-JSON error, got %v", err)
	}
	if hits.Load() != 3 {
		t.Fatalf("prose should be retried up to the bound, got %d calls", hits.Load())
	}
}

func TestOpenAIUnauthorizedNotRetried(t *testing.T) {
	var hits atomic.Int32
	srv := chatServer(t, &hits, "{}")
	defer srv.Close()
	p := newTestOpenAI(t, srv.URL)
	p.cfg.APIKey = "wrong"
	if _, err := p.Extract(context.Background(), "ACME", "x"); err == nil || hits.Load() != 1 {
		t.Fatalf("err %v hits %d", err, hits.Load())
	}
}

func TestOpenAISlowAlways(t *testing.T) {
	var hits atomic.Int32
	srv := chatServer(t, &hits, "SLOW")
	defer srv.Close()
	start := time.Now()
	_, err := newTestOpenAI(t, srv.URL).Extract(context.Background(), "ACME", "x")
	if err == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
}

func FuzzParseReply(f *testing.F) {
	f.Add(`{"title":"x","tags":["a"],"amount":12.5,"confidence":"80%"}`)
	f.Add("```json\n{}\n```")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseReply(s)
		if err == nil && (len(m.Tags) > MaxTags || m.Confidence < 0 || m.Confidence > 1) {
			t.Fatalf("not normalised: %+v", m)
		}
	})
}

func FuzzRules(f *testing.F) {
	f.Add("Rechnung 15.03.2024 1.234,56 € DE89 3704 0044 0532 0130 00", "a.pdf")
	f.Fuzz(func(t *testing.T, text, name string) {
		if _, err := NewRules().Extract(context.Background(), text, name); err != nil {
			t.Fatal(err)
		}
	})
}
