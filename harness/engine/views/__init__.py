"""What people look at, read from a run's result alone: terminal tables and the matrix fitted to
the window, a run as a picture, the offline pages."""
