// engine goes here
