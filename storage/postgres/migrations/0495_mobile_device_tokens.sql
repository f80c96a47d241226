-- A push token is looked up across owners at registration (a phone's token
-- follows whoever signed in on it last) and devices by owner for the push
-- fan-out.
CREATE INDEX IF NOT EXISTS mobile_devices_push_token ON mobile_devices (push_token);
CREATE INDEX IF NOT EXISTS mobile_devices_owner_active ON mobile_devices (owner_id) WHERE is_active;
