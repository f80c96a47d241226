package app

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/anthdm/hollywood/actor"

	"docflow"
	"docflow/actors/alerts"
	"docflow/actors/delivery"
	"docflow/integrations/expo"
	"docflow/integrations/webhook"
	"docflow/storage/postgres"
)

// startDelivery starts the delivery of events to webhooks, automation
// hooks and push devices (serve and worker: the processes that run
// workers). Every such process joins the same consumer groups, so the
// deliveries are shared among them.
func (m *App) startDelivery(ctx context.Context) error {
	cfg := delivery.Config{Actors: m.Actors, Brokers: m.Brokers, Store: m.Webhooks, Settings: m.Settings,
		Senders: map[string]delivery.Sender{
			docflow.SubscriberWebhook: webhook.NewSender(m.Settings),
			docflow.SubscriberHook:    webhook.NewHookSender(m.Settings),
			docflow.SubscriberDevice:  expo.NewSender(m.Settings, m.Devices),
			docflow.SubscriberAdmin:   delivery.AdminSender{Notifier: m.Notifier}},
		Publisher: m.Producer, Log: m.Log, Metrics: m.Recorder,
		Partitions: docflow.KafkaPartitions.Get(m.Settings)}
	if m.cfg.Delivery != nil {
		m.cfg.Delivery(&cfg)
	}
	d, err := delivery.New(cfg)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := d.Start(sctx); err != nil {
		return fmt.Errorf("start event delivery: %w", err)
	}
	m.Delivery = d
	m.onDrain("event delivery", d.Close)
	return nil
}

// startAlerts starts the actor that tells the admins, once per failure,
// about integrations failing for longer than
// INTEGRATION_FAILING_NOTIFY_AFTER (serve and worker: every such process
// runs one; their claims never overlap). The notifications go out through
// the delivery core as the admin subscriber's deliveries.
func (m *App) startAlerts() error {
	cfg := alerts.Config{Store: postgres.NewIntegrationAlertStore(m.DB, delivery.AttemptMessage),
		Settings: m.Settings, Log: m.Log}
	if m.cfg.Alerts != nil {
		m.cfg.Alerts(&cfg)
	}
	id := fmt.Sprintf("%s-%d", m.Role, os.Getpid())
	pid, err := alerts.Spawn(m.Actors, id, cfg)
	if err != nil {
		return err
	}
	m.Alerts = pid
	m.stopOnClose("alerts", pid)
	return nil
}

// stopOnClose poisons the long-lived actor pid (name in the shutdown's
// log) when the app closes and waits for it to stop, or for the close's
// deadline.
func (m *App) stopOnClose(name string, pid *actor.PID) {
	m.onDrain(name, func(ctx context.Context) error {
		select {
		case <-m.Actors.Poison(pid).Done():
		case <-ctx.Done():
		}
		return nil
	})
}
