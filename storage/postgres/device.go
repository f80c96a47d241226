package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// DeviceStore implements docflow.DeviceStore on mobile_devices; the
// push sender deactivates through it the devices the relay reports
// unregistered.
type DeviceStore struct{ db *DB }

var _ docflow.DeviceStore = (*DeviceStore)(nil)

// NewDeviceStore returns the store.
func NewDeviceStore(db *DB) *DeviceStore { return &DeviceStore{db: db} }

const deviceCols = `id, owner_id, push_token, device_name, platform, is_active, created_at`

func scanDevice(row pgx.Row) (*docflow.MobileDevice, error) {
	var d docflow.MobileDevice
	if err := row.Scan(&d.ID, &d.OwnerID, &d.PushToken, &d.DeviceName, &d.Platform, &d.IsActive, &d.CreatedAt); err != nil {
		return nil, err
	}
	d.PushTokenPreview = docflow.PushTokenPreview(d.PushToken)
	return &d, nil
}

// RegisterDevice stores d (validated by the caller), or reactivates and
// renames the owner's device with the same token, in one transaction that
// also removes the token from any other owner.
func (s *DeviceStore) RegisterDevice(ctx context.Context, d *docflow.MobileDevice) (created bool, err error) {
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM mobile_devices WHERE push_token = $1 AND owner_id <> $2`,
			d.PushToken, d.OwnerID); err != nil {
			return err
		}
		// xmax = 0 tells an inserted row from an updated one.
		got, err := scanDeviceCreated(tx.QueryRow(ctx, `INSERT INTO mobile_devices (owner_id, push_token, device_name, platform)
			VALUES ($1, $2, $3, $4)
			ON CONFLICT (owner_id, push_token) DO UPDATE SET is_active = TRUE,
				device_name = EXCLUDED.device_name, platform = EXCLUDED.platform, updated_at = now()
			RETURNING `+deviceCols+`, (xmax = 0)`, d.OwnerID, d.PushToken, d.DeviceName, d.Platform), &created)
		if err != nil {
			return err
		}
		*d = *got
		return nil
	})
	return created, dbErr(err)
}

func scanDeviceCreated(row pgx.Row, created *bool) (*docflow.MobileDevice, error) {
	var d docflow.MobileDevice
	if err := row.Scan(&d.ID, &d.OwnerID, &d.PushToken, &d.DeviceName, &d.Platform, &d.IsActive, &d.CreatedAt, created); err != nil {
		return nil, err
	}
	d.PushTokenPreview = docflow.PushTokenPreview(d.PushToken)
	return &d, nil
}

// FindDevices lists owner's devices, oldest first.
func (s *DeviceStore) FindDevices(ctx context.Context, owner string) ([]*docflow.MobileDevice, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+deviceCols+` FROM mobile_devices WHERE owner_id = $1 ORDER BY id`, owner)
	if err != nil {
		return nil, dbErr(err)
	}
	defer rows.Close()
	out := []*docflow.MobileDevice{}
	for rows.Next() {
		d, err := scanDevice(rows)
		if err != nil {
			return nil, dbErr(err)
		}
		out = append(out, d)
	}
	return out, dbErr(rows.Err())
}

// DeleteDevice deactivates owner's device id when it is active, deletes it
// when it is not.
func (s *DeviceStore) DeleteDevice(ctx context.Context, owner string, id int64) (deleted bool, err error) {
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var active bool
		if err := tx.QueryRow(ctx, `SELECT is_active FROM mobile_devices WHERE id = $1 AND owner_id = $2 FOR UPDATE`,
			id, owner).Scan(&active); err != nil {
			return notFound(err, "Device not found")
		}
		if active {
			_, err := tx.Exec(ctx, `UPDATE mobile_devices SET is_active = FALSE, updated_at = now() WHERE id = $1`, id)
			return err
		}
		deleted = true
		_, err := tx.Exec(ctx, `DELETE FROM mobile_devices WHERE id = $1`, id)
		return err
	})
	return deleted, dbErr(err)
}

// DeactivateDevice deactivates device id (the relay reported its token
// unregistered); a device gone already is no error.
func (s *DeviceStore) DeactivateDevice(ctx context.Context, id int64) error {
	_, err := s.db.Pool.Exec(ctx, `UPDATE mobile_devices SET is_active = FALSE, updated_at = now() WHERE id = $1`, id)
	return dbErr(err)
}
