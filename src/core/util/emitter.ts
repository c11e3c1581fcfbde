// Typed events with one subscriber. A service says what happened (`emit`); the one place that
// built it (the wiring) decides what follows, by subscribing once with a handler for every event
// the service can emit. A second subscriber is a wiring mistake and throws, so that no event is
// ever handled twice or by a listener nobody can find.

/** The events a service can emit: each name with the payload it carries. */
export type EventMap = object;

/** One handler for each event of `E`. */
export type Handlers<E extends EventMap> = { [K in keyof E]: (payload: E[K]) => void };

export class Emitter<E extends EventMap> {
  private handlers: Handlers<E> | undefined;

  /** Take every event of this emitter (once: a second subscriber throws). */
  subscribe(handlers: Handlers<E>): void {
    if (this.handlers !== undefined) throw new Error('an emitter has one subscriber');
    this.handlers = handlers;
  }

  /** Say what happened; without a subscriber nothing follows. */
  emit<K extends keyof E>(name: K, payload: E[K]): void {
    this.handlers?.[name](payload);
  }
}
